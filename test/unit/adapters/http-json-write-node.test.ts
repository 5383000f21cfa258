import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { httpJsonAdapter } from "../../../src/adapters/http-json-adapter.ts";
import { applyHttpJson } from "../../../src/adapters/http-json-apply.ts";
import { nodeHttpClient } from "../../../src/adapters/node-http-client.ts";
import { nodeHttpPools } from "../../../src/adapters/read-only-http.ts";
import type { HttpJsonPlanned } from "../../../src/plan/schema.ts";
import { targetConfig, WRITE_TOKEN } from "../../support/harness.ts";

/**
 * The executor's writes on node:http (nodeHttpClient, the http.json adapter without a fetch):
 * what fetch gave them, and a write is never sent twice, not even when the kept-alive connection
 * it went out on was closed under it.
 */

const servers: (Server | NetServer)[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    if ("closeAllConnections" in server) server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const DIGEST = "0".repeat(64);
const action: HttpJsonPlanned = {
  kind: "http.json",
  target: "crm",
  path: "/contacts/1",
  op: "merge",
  body: { email: "new@example.com" },
  precondition: { etag: '"v1"' },
  beforeDigest: DIGEST,
  afterDigest: DIGEST,
};
/** Generous: the machine is loaded; only the timeout test waits out a shorter one. */
const TIMEOUT_MS = 10_000;

async function httpTarget(
  handle: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ baseUrl: string; seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] }> {
  const seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      handle(req, res, body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const write = (baseUrl: string, timeoutMs = TIMEOUT_MS) => targetConfig(baseUrl, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } }, timeoutMs });

describe("http.json writes on node:http", () => {
  it("sends the precondition, the credential and the body once, asks for no compression, and reads a 2xx JSON answer as applied", async () => {
    const t = await httpTarget((_req, res) => res.writeHead(200, { "content-type": "application/json", etag: '"v2"' }).end('{"id":1}'));
    const result = await applyHttpJson(nodeHttpClient(nodeHttpPools()), "crm", write(t.baseUrl), action, "plan:0");
    expect(result).toEqual({ status: "applied", httpStatus: 200, etag: '"v2"' });
    expect(t.seen).toHaveLength(1);
    const [patch] = t.seen;
    expect(patch).toMatchObject({ method: "PATCH", url: "/contacts/1", body: JSON.stringify(action.body) });
    expect(patch!.headers).toMatchObject({
      "if-match": '"v1"',
      "idempotency-key": "plan:0",
      authorization: `Bearer ${WRITE_TOKEN}`,
      "content-type": "application/merge-patch+json",
      "accept-encoding": "identity",
    });
  });

  it("decodes an answer the target compresses anyway (gzip), and a 2xx whose compressed body is broken is uncertain", async () => {
    let broken = false;
    const t = await httpTarget((_req, res) => {
      const gz = gzipSync(Buffer.from('{"id":1,"email":"new@example.com"}'));
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(broken ? gz.subarray(0, gz.length - 12) : gz);
    });
    const client = nodeHttpClient(nodeHttpPools());
    expect(await applyHttpJson(client, "crm", write(t.baseUrl), action, "plan:0")).toMatchObject({ status: "applied", httpStatus: 200 });
    broken = true;
    expect(await applyHttpJson(client, "crm", write(t.baseUrl), action, "plan:0")).toMatchObject({ status: "uncertain", httpStatus: 200 });
  });

  it("does not follow a redirect: the target's 307 is its answer, and nothing reaches the other path", async () => {
    const t = await httpTarget((req, res) => {
      if (req.url === "/contacts/1") res.writeHead(307, { location: "/elsewhere" }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    const result = await applyHttpJson(nodeHttpClient(nodeHttpPools()), "crm", write(t.baseUrl), action, "plan:0");
    expect(result).toMatchObject({ status: "failed", httpStatus: 307 });
    expect(t.seen.map((s) => s.url)).toEqual(["/contacts/1"]);
  });

  it("a target that does not answer within the timeout leaves the write uncertain", async () => {
    const t = await httpTarget(() => undefined);
    const result = await applyHttpJson(nodeHttpClient(nodeHttpPools()), "crm", write(t.baseUrl, 300), action, "plan:0");
    expect(result).toMatchObject({ status: "uncertain" });
    expect(result.status === "uncertain" && result.detail).toContain("timed out after 300 ms");
  });

  it("a PATCH on a kept-alive connection the target closes under it is uncertain, and is not sent again on a new connection", async () => {
    // A target that speaks HTTP/1.1 by hand: it answers the GET and keeps the connection open,
    // then closes that connection when the PATCH arrives on it, without an answer (what a
    // target's idle timeout firing as the PATCH goes out looks like to the client).
    const requests: { method: string; connection: number }[] = [];
    let connections = 0;
    const server = createNetServer((socket: Socket) => {
      const connection = ++connections;
      let buffered = "";
      socket.on("data", (chunk: Buffer) => {
        buffered += chunk.toString("latin1");
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const method = buffered.slice(0, buffered.indexOf(" "));
        requests.push({ method, connection });
        buffered = "";
        if (method === "GET") {
          const body = '{"id":1,"email":"old@example.com"}';
          socket.write(
            `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\netag: "v1"\r\ncontent-length: ${body.length}\r\nkeep-alive: timeout=65\r\n\r\n${body}`,
          );
        } else {
          socket.destroy();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    const target = write(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);

    // Through the adapter, as the executor does: its reader and writer share one pool, so the
    // PATCH goes out on the connection the revalidating GET left open.
    const adapter = httpJsonAdapter();
    const reader = adapter.openReader("crm", target);
    const writer = adapter.openWriter("crm", target);
    expect(await reader.read(action)).toMatchObject({ exists: true, version: '"v1"' });
    const result = await writer.apply(action, "plan:0");
    expect(result.status).toBe("uncertain");
    expect(result.status === "uncertain" && result.detail).toMatch(/got no answer \(ECONNRESET\); the write may or may not have happened/);
    // A resend would have come before the answer settled, on a second connection.
    expect(requests).toEqual([
      { method: "GET", connection: 1 },
      { method: "PATCH", connection: 1 },
    ]);
    expect(connections).toBe(1);
  });
});
