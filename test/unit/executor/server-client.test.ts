import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { executorServer, ReportRefused, ServerRefused } from "../../../src/executor/server-client.ts";

/** The executor's client of the server on node:http (its default): the answers it tells apart, and a stop that ends a long-poll. */

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function server(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<string> {
  const s = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")));
  });
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  servers.push(s);
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/`;
}

const DIGEST = `sha256:${"ab".repeat(32)}`;
/** A claim as the server sends one: every member the executor API's schema asks for. */
const CLAIM = {
  plan: {
    v: 1,
    id: "7b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e11",
    environment: "test",
    agent: "unit-agent",
    title: "Rename a contact",
    actions: [
      {
        kind: "http.json",
        target: "crm",
        path: "/contacts/1",
        op: "merge",
        body: { name: "Ana" },
        precondition: { etag: '"v1"' },
        beforeDigest: DIGEST,
        afterDigest: DIGEST,
      },
    ],
    policy: { approvers: ["U0ALICE"], requiredApprovals: 1, grantTtlSeconds: 600 },
    expiresAt: "2030-01-01T00:00:00.000Z",
  },
  preview: { actions: [] },
  grant: "header.payload.signature",
  claimToken: "t1",
  leaseExpiresAt: "2030-01-01T00:00:00.000Z",
};

const KID_A = "a".repeat(40) + "_-A";
const KID_B = "b".repeat(43);

describe("executorServer on node:http", () => {
  it("claims (200 with the claim, 204 with none), heartbeats and reports with the bearer token, and tells refusals apart", async () => {
    const seen: string[] = [];
    let claims = 0;
    const url = await server((req, res, body) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization} ${body}`);
      if (req.headers.authorization !== "Bearer good") return void res.writeHead(401).end("{}");
      if (req.url === `/v1/executor/claim?kid=${KID_A}&kid=${KID_B}`) {
        if (claims++ === 0) return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(CLAIM));
        return void res.writeHead(204).end();
      }
      if (req.url === "/v1/executor/claims/t1/heartbeat") return void res.writeHead(409, { "content-type": "application/json" }).end("{}");
      if (req.url === "/v1/executor/claims/t1/report")
        return void res.writeHead(400, { "content-type": "application/json" }).end('{"error":"invalid outcome"}');
      res.writeHead(404).end();
    });
    const client = executorServer(url, "good");
    expect(await client.claim([KID_A, KID_B])).toEqual(CLAIM);
    expect(await client.claim([KID_A, KID_B])).toBeUndefined();
    expect(await client.heartbeat("t1")).toBe(false);
    const refused = await client.report("t1", { status: "applied", actions: [] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ReportRefused);
    expect((refused as ReportRefused).message).toContain('HTTP 400: {"error":"invalid outcome"}');
    expect(seen.at(-1)).toBe('POST /v1/executor/claims/t1/report Bearer good {"status":"applied","actions":[]}');
    await expect(executorServer(url, "bad").claim([KID_A])).rejects.toBeInstanceOf(ServerRefused);
  });

  it("a stop ends a claim's long-poll at once, with the stop's reason", async () => {
    let arrived!: () => void;
    const polled = new Promise<void>((resolve) => (arrived = resolve));
    // A long-poll that is never answered.
    const url = await server(() => arrived());
    const stopping = new AbortController();
    const claim = executorServer(url, "good").claim([KID_A], stopping.signal);
    await polled;
    const reason = new Error("stopping");
    stopping.abort(reason);
    await expect(claim).rejects.toBe(reason);
  });

  it("reads the server's grant keys with GET, checks them against the contract, and says so when the server does not publish them", async () => {
    const seen: string[] = [];
    let answer: { status: number; body: string } = { status: 200, body: JSON.stringify({ keys: [{ kid: KID_A, fingerprint: DIGEST }] }) };
    const url = await server((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
    });
    const client = executorServer(url, "good");
    expect(await client.keys()).toEqual({ keys: [{ kid: KID_A, fingerprint: DIGEST }] });
    expect(seen).toEqual(["GET /v1/executor/keys Bearer good"]);
    answer = { status: 200, body: JSON.stringify({ keys: [{ kid: "not a kid", fingerprint: DIGEST }] }) };
    await expect(client.keys()).rejects.toThrow(/the server's list of grant keys does not match the executor API: \/keys\/0\/kid/);
    answer = { status: 404, body: "{}" };
    expect(await client.keys()).toBeUndefined();
    answer = { status: 401, body: "{}" };
    await expect(client.keys()).rejects.toBeInstanceOf(ServerRefused);
  });
});
