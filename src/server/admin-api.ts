import { Hono } from "hono";
import { z } from "zod";
import { SlackUserId } from "../plan/schema.ts";
import { whyUnstorableText } from "../plan/storable.ts";
import { addAgent } from "../service/agents/index.ts";
import { ServiceError } from "../service/errors.ts";
import { listAgents } from "../service/agents/index.ts";
import { pauseCountersign, readPause, resumeCountersign } from "../service/operations/index.ts";
import { revokeAgent } from "../service/agents/index.ts";
import { validate } from "../service/validate.ts";
import { verifyAudit } from "../service/audit/index.ts";
import { createDelegation, endDelegation, listDelegations } from "../service/delegation/index.ts";
import { exportAudit } from "../service/audit/index.ts";
import { loadSealPublicKeys } from "../service/audit/index.ts";
import { parseSealsFile, verifySeals } from "../service/audit/index.ts";
import type { ServiceContext } from "../service/context.ts";
import { bearerMatches } from "../util/bearer.ts";
import { readJsonBody } from "../http/json-body.ts";

const ADMIN_BODY_BYTES = 16 * 1024;
const NewAgent = z.strictObject({ name: z.string().min(1).max(100) });
const NewLoginLink = z.strictObject({ userId: SlackUserId, name: z.string().max(200).optional() });
/** `by` is the operating-system user at the CLI (or its --by), recorded in the audit log. */
const PauseRequest = z.strictObject({ reason: z.string().max(4000), by: z.string().min(1).max(200) });
const ResumeRequest = z.strictObject({ by: z.string().min(1).max(200) });
/** `countersign delegate` against a server holding the data dir: the service checks each field and says what is wrong. */
const NewDelegation = z.strictObject({
  delegator: z.string().max(40),
  delegate: z.string().max(40),
  until: z.string().max(40),
  targets: z.array(z.string().max(200)).max(100).optional(),
  by: z.string().min(1).max(200),
});
const EndDelegation = z.strictObject({ by: z.string().min(1).max(200) });
/** `audit verify --seals` against a server holding the data dir: the seals file's text and the public key PEM. */
const VerifySealsRequest = z.strictObject({ seals: z.string().min(1), publicKey: z.string().min(1) });
/** A seals file gains a few hundred bytes per signature: years of them fit. */
const SEALS_BODY_BYTES = 256 * 1024 * 1024;

/**
 * `/admin`: how the CLI reaches a running server that owns an embedded (PGlite) data dir,
 * which only one process may open. Authenticated by a random token the server writes, readable
 * only by its owner, into the data dir.
 */
export function adminApi(
  ctx: Pick<ServiceContext, "database" | "clock" | "config" | "directory" | "profiles">,
  adminToken: string,
  loginLink?: (userId: string, name: string | undefined) => Promise<{ url: string; expiresAt: string }>,
): Hono {
  const admin = new Hono();
  admin.use("*", async (c, next) => {
    if (!bearerMatches(c.req.header("authorization"), adminToken)) {
      throw new ServiceError("unauthorized", "the admin token is wrong; the CLI reads it from the data dir");
    }
    await next();
  });
  admin.post("/agents", async (c) => {
    const { name } = validate(NewAgent, await readJsonBody(c.req.raw, { what: "the agent", maxBytes: ADMIN_BODY_BYTES }), "the agent");
    return c.json(await addAgent(ctx, { name }), 201);
  });
  admin.get("/agents", async (c) => c.json({ agents: await listAgents(ctx) }));
  admin.post("/agents/:name/revoke", async (c) => {
    const why = whyUnstorableText(c.req.param("name"));
    if (why) throw new ServiceError("invalid_request", `the agent name ${why}`, { issues: [{ path: "/name", message: why }] });
    await revokeAgent(ctx, { name: c.req.param("name") });
    return c.json({ revoked: c.req.param("name") });
  });
  admin.get("/audit/verify", async (c) => c.json(await verifyAudit(ctx)));
  admin.post("/audit/verify-seals", async (c) => {
    const { seals, publicKey } = validate(
      VerifySealsRequest,
      await readJsonBody(c.req.raw, { what: "the published seals", maxBytes: SEALS_BODY_BYTES }),
      "the published seals",
    );
    const entries = parseSealsFile(seals);
    let keys: ReturnType<typeof loadSealPublicKeys>;
    try {
      keys = loadSealPublicKeys(publicKey);
    } catch (err) {
      throw new ServiceError("invalid_request", `--public-key: ${(err as Error).message}`);
    }
    return c.json({ published: await verifySeals(ctx, entries, keys), verdict: await verifyAudit(ctx) });
  });
  admin.get("/audit/export", (c) => {
    const since = new Date(c.req.query("since") ?? "");
    if (Number.isNaN(since.getTime())) throw new ServiceError("invalid_request", "since must be an ISO 8601 time");
    const events = exportAudit(ctx, { since });
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await events.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(JSON.stringify(next.value) + "\n"));
      },
      async cancel() {
        await events.return(undefined);
      },
    });
    return c.body(body, 200, { "content-type": "application/x-ndjson" });
  });
  admin.get("/pause", async (c) => c.json({ pause: (await readPause(ctx.database.db)) ?? null }));
  admin.post("/pause", async (c) => {
    const { reason, by } = validate(PauseRequest, await readJsonBody(c.req.raw, { what: "the pause", maxBytes: ADMIN_BODY_BYTES }), "the pause");
    return c.json(await pauseCountersign(ctx, { operator: { via: "cli", name: by }, reason }), 201);
  });
  admin.post("/resume", async (c) => {
    const { by } = validate(ResumeRequest, await readJsonBody(c.req.raw, { what: "the resume", maxBytes: ADMIN_BODY_BYTES }), "the resume");
    return c.json(await resumeCountersign(ctx, { operator: { via: "cli", name: by } }));
  });
  admin.get("/delegations", async (c) => c.json({ delegations: await listDelegations(ctx, { ended: c.req.query("ended") === "1" }) }));
  admin.post("/delegations", async (c) => {
    const { by, ...input } = validate(NewDelegation, await readJsonBody(c.req.raw, { what: "the delegation", maxBytes: ADMIN_BODY_BYTES }), "the delegation");
    return c.json(await createDelegation(ctx, { ...input, by: { cli: by } }), 201);
  });
  admin.post("/delegations/:id/end", async (c) => {
    const { by } = validate(
      EndDelegation,
      await readJsonBody(c.req.raw, { what: "the end of a delegation", maxBytes: ADMIN_BODY_BYTES }),
      "the end of a delegation",
    );
    return c.json(await endDelegation(ctx, { id: c.req.param("id"), by: { cli: by } }));
  });
  admin.post("/login-links", async (c) => {
    if (!loginLink) throw new ServiceError("invalid_request", "sign-in links are switched off in this Countersign's config (browser.loginLinks)");
    const { userId, name } = validate(
      NewLoginLink,
      await readJsonBody(c.req.raw, { what: "the sign-in link request", maxBytes: ADMIN_BODY_BYTES }),
      "the sign-in link request",
    );
    return c.json(await loginLink(userId, name), 201);
  });
  return admin;
}
