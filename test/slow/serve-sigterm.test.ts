import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runCli, startCli } from "../support/cli.ts";
import { crmTargetYaml } from "../support/crm-target-yaml.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, testGrantKeys } from "../support/harness.ts";

/**
 * What `countersign serve` does on SIGTERM, one real process on PGlite: readiness turns false
 * first, a waiting long-poll is answered at once with the plan as it stands and an executor's
 * claim with 204, a live stream ends, no connection is accepted, a request in flight finishes,
 * one that never would is cut, and the process exits 0 within `shutdownSeconds`.
 */
const SHUTDOWN_SECONDS = 5;
const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** One request on a connection of its own (no pool), its body written by the caller. */
function open(url: string, method: string, p: string, headers: Record<string, string> = {}): { request: http.ClientRequest; answer: Promise<Answer> } {
  const request = http.request(`${url}${p}`, { method, headers, agent: false });
  const answer = new Promise<Answer>((resolve, reject) => {
    request.on("error", reject);
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (d: string) => (body += d));
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, body, at: performance.now() }));
      response.on("error", reject);
    });
  });
  answer.catch(() => undefined); // awaited by the test; an early failure must not be unhandled meanwhile
  return { request, answer };
}

describe("countersign serve on SIGTERM", () => {
  let dir: string;
  let target: JsonResourceServer;
  let server: Awaited<ReturnType<typeof startCli>> | undefined;
  let url: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-sigterm-"));
    target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1, email: "ana@old.example" } }, readTokens: [READ_TOKEN] });
    await target.start();
    writeFileSync(
      path.join(dir, "countersign.yml"),
      [
        "environment: test",
        `shutdownSeconds: ${SHUTDOWN_SECONDS}`,
        "defaults: { approvers: [U0ALICE] }",
        ...crmTargetYaml(target.url, { allowMerges: true }),
      ].join("\n"),
    );
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
      COUNTERSIGN_DATA_DIR: path.join(dir, "data"),
      COUNTERSIGN_GRANT_PRIVATE_KEY: (await testGrantKeys()).privatePem,
      COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN,
      CRM_READ: READ_TOKEN,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: url,
    };
    server = await startCli(["serve"], { cwd: dir, env: { ...env, LOG_LEVEL: "info" }, ready: /countersign serving/, timeoutMs: 120_000 });
  }, 180_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null) await server.stop();
    await target?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("turns readiness false first, answers long-polls at once, ends live streams, lets requests finish, and exits within shutdownSeconds", async () => {
    const added = await runCli(["agents", "add", "sigterm-agent"], { cwd: dir, env });
    expect(added.code, added.stderr).toBe(0);
    const agentKey = added.stdout.trimEnd().split("\n").at(-1)!;
    const agent = { authorization: `Bearer ${agentKey}`, "content-type": "application/json" };
    const planRequest = (i: number) =>
      JSON.stringify({
        title: `sigterm ${i}`,
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: `ana${i}@new.example` } }],
      });
    const submitted = await fetch(`${url}/v1/plans`, { method: "POST", headers: agent, body: planRequest(0) });
    expect(submitted.status, await submitted.clone().text()).toBe(201);
    const plan = (await submitted.json()) as { id: string; status: string };

    // A signed-in browser, for a live stream.
    const link = await runCli(["login-link", "--user", "U0ALICE"], { cwd: dir, env });
    expect(link.code, link.stderr).toBe(0);
    const token = new URL(link.stdout.trimEnd().split("\n").at(-1)!).pathname.split("/").at(-1)!;
    const login = await fetch(`${url}/login/${token}`, {
      method: "POST",
      headers: { origin: url, "content-type": "application/x-www-form-urlencoded" },
      body: "",
      redirect: "manual",
    });
    expect(login.status).toBe(303);
    const cookie = /cs_session=[^;]+/.exec(login.headers.get("set-cookie") ?? "")![0];

    // Each on a connection of its own, all in flight when the signal comes.
    const wait = open(url, "GET", `/v1/plans/${plan.id}/wait?timeout=60`, { authorization: agent.authorization });
    wait.request.end();
    const claim = open(url, "POST", "/v1/executor/claim?wait=25", { authorization: `Bearer ${EXECUTOR_TOKEN}` });
    claim.request.end();
    const live = open(url, "GET", `/plans/${plan.id}/live`, { cookie, accept: "text/event-stream" });
    live.request.end();
    const liveHeaders = new Promise<void>((resolve) => live.request.on("response", () => resolve()));
    // An upload half sent: it finishes after the signal. One that never ends is cut.
    const body = planRequest(1);
    const finishing = open(url, "POST", "/v1/plans", { ...agent, "content-length": String(Buffer.byteLength(body)) });
    finishing.request.write(body.slice(0, 20));
    const stuck = open(url, "POST", "/v1/plans", { ...agent, "content-length": String(Buffer.byteLength(body)) });
    stuck.request.write(body.slice(0, 20));
    // A readiness probe whose last line comes after the signal, on a connection already open.
    const probe = net.connect(Number(new URL(url).port), "127.0.0.1");
    let probed = "";
    probe.setEncoding("utf8");
    probe.on("data", (d: string) => (probed += d));
    const probeClosed = new Promise<void>((resolve) => probe.on("close", () => resolve()));
    probe.write("GET /readyz HTTP/1.1\r\nHost: countersign\r\n");
    await liveHeaders;
    // Answered after everything above was sent on its own connection: the server has read them all.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const exited = new Promise<{ code: number | null; at: number }>((resolve) => server!.child.on("close", (code) => resolve({ code, at: performance.now() })));
    const signalledAt = performance.now();
    server!.child.kill("SIGTERM");

    const waited = await wait.answer;
    expect(waited.status).toBe(200);
    expect(JSON.parse(waited.body)).toMatchObject({ id: plan.id, status: "pending" });
    expect((await claim.answer).status).toBe(204);
    // The live stream ended; the browser's EventSource reconnects (to another replica).
    const streamed = await live.answer;
    expect(streamed.status).toBe(200);
    expect(streamed.body).toMatch(/^id: /m); // what it said before it ended; a reconnect sends it back as Last-Event-ID

    probe.write("\r\n");
    await probeClosed;
    expect(probed).toMatch(/^HTTP\/1\.1 503 /);
    expect(probed.toLowerCase()).toContain("connection: close");
    expect(probed).toContain('"reason":"shutting down"');

    // No new connection is accepted.
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();

    finishing.request.end(body.slice(20));
    const finished = await finishing.answer;
    expect(finished.status, finished.body).toBe(201);
    expect(finished.headers.connection).toBe("close");

    await expect(stuck.answer).rejects.toThrow();
    const exit = await exited;
    expect(exit.code, server!.output().slice(-3000)).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(SHUTDOWN_SECONDS * 1000);
    // Everything in flight was answered before the one that never ends was cut.
    for (const answered of [waited, streamed, finished]) expect(answered.at).toBeLessThan(exit.at);
    expect(server!.output()).toContain("requests still running near the end of shutdownSeconds were cut off");
  });
});
