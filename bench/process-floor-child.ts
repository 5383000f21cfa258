/**
 * One process of a process floor (bench/process-floor.ts): the least the product's process layout
 * costs, with the product's drivers (postgres.js max 10, node:http) and no product code. Run over
 * IPC by process-floor.ts:
 *   node --import tsx bench/process-floor-child.ts decider DATABASE_URL TARGET_URL CHANNEL
 *   node --import tsx bench/process-floor-child.ts executor DATABASE_URL TARGET_URL CHANNEL
 *   node --import tsx bench/process-floor-child.ts intake DATABASE_URL TARGET_URL CHANNEL
 * - intake: a bare node:http server taking what the bench POSTs to the product's /v1/plans (the
 *   same JSON): it reads and parses the body, reads the agent's key, GETs the target its first
 *   action names, runs the intake floor's three inserts in one statement (floor.ts, from the
 *   templates it was sent) and answers 201 with the stored plan's id, document and preview, about
 *   the product's answer's size. Sends { url } once listening; needs { templates } before its first request.
 * - decider: a bare node:http server. `POST /` with `{ planId, contact }` is answered at once (as
 *   the product acks a click before deciding), then: GET the target (the approval-time re-check),
 *   then one statement: UPDATE the floor plan pending → executing (approved and handed over at
 *   once, as the product's approval at quorum hands its plan to a waiting executor in its own
 *   statement) and NOTIFY `planId contact`. Sends { url } once listening.
 * - executor: LISTENs; per notification: GET the target (revalidation), PATCH with If-Match,
 *   then UPDATE executing → applied. Sends { ready } once listening, then { applied: planId } or { failed: planId, error } per plan.
 * Both exit when the IPC channel closes.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import postgres from "postgres";
import { getTarget, patchTarget } from "./floor-http.ts";
import { floorSubmit, type Row, type Templates } from "./floor.ts";

const [role, databaseUrl, targetUrl, channel, readToken, writeToken] = process.argv.slice(2);
if ((role !== "decider" && role !== "executor" && role !== "intake") || !databaseUrl || !targetUrl || !channel || !readToken || !writeToken || !process.send) {
  console.error(
    "usage (from process-floor.ts, with an IPC channel): process-floor-child.ts decider|executor|intake DATABASE_URL TARGET_URL CHANNEL READ_TOKEN WRITE_TOKEN",
  );
  process.exit(2);
}
const send = (message: Record<string, unknown>) => process.send!(message);

/** Templates arrive over IPC as JSON: timestamps come back as Dates (postgres.js types them so). */
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const reviveRow = (row: Row): Row => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "string" && TIMESTAMP.test(v) ? new Date(v) : v]));
const revive = (t: Templates): Templates => ({ plan: reviveRow(t.plan), audit: reviveRow(t.audit), outbox: reviveRow(t.outbox), agentKeyHash: t.agentKeyHash });
const sql = postgres(databaseUrl, { onnotice: () => {}, max: 10 });

/** GETs a target path with the read credential, its body read; resolves with its ETag. */
const get = async (path: string): Promise<string> => (await getTarget(targetUrl, path, readToken)).etag;

/** A bare node:http server handing each request's whole body to `onBody`; sends { url } once listening. */
async function serveBodies(onBody: (body: string, res: ServerResponse) => void): Promise<() => Promise<void>> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => onBody(Buffer.concat(chunks).toString("utf8"), res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  send({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  return async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
}

let stop: () => Promise<void>;
if (role === "intake") {
  let templates: Templates | undefined;
  process.on("message", (m: { templates?: Templates }) => {
    if (m.templates) templates = revive(m.templates);
  });
  stop = await serveBodies((body, res) => {
    void (async () => {
      const request = JSON.parse(body) as { actions: { path: string }[] };
      if (!templates) throw new Error("no templates yet");
      const id = await floorSubmit(sql, templates, () => get(request.actions[0]!.path));
      res
        .writeHead(201, { "content-type": "application/json" })
        .end(JSON.stringify({ id, status: "pending", document: templates.plan.document, preview: templates.plan.preview }));
    })().catch((err: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(String(err)));
  });
} else if (role === "decider") {
  stop = await serveBodies((body, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
    const { planId, contact } = JSON.parse(body) as { planId: string; contact: number };
    void (async () => {
      await get(`/contacts/${contact}`);
      const [moved] =
        await sql`WITH moved AS (UPDATE bench_floor.plans SET status = 'executing', updated_at = now() WHERE id = ${planId} AND status = 'pending' RETURNING id)
        SELECT pg_notify(${channel}, id::text || ' ' || ${String(contact)}) AS notified FROM moved`;
      if (!moved) throw new Error(`plan ${planId} was not pending`);
    })().catch((err: unknown) => send({ failed: planId, error: String(err) }));
  });
} else {
  const { unlisten } = await sql.listen(channel, (payload) => {
    const [planId, contact] = payload.split(" ") as [string, string];
    void (async () => {
      const etag = await get(`/contacts/${contact}`);
      await patchTarget(targetUrl, `/contacts/${contact}`, writeToken, etag, { email: `pfloor-${planId.slice(0, 8)}@new.example` });
      await sql`UPDATE bench_floor.plans SET status = 'applied', updated_at = now() WHERE id = ${planId} AND status = 'executing'`;
      send({ applied: planId });
    })().catch((err: unknown) => send({ failed: planId, error: String(err) }));
  });
  send({ ready: true });
  stop = unlisten;
}
process.on(
  "disconnect",
  () =>
    void stop()
      .finally(() => sql.end({ timeout: 5 }))
      .then(() => process.exit(0)),
);
