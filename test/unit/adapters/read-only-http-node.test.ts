import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createReadOnlyHttp } from "../../../src/adapters/read-only-http.ts";

/** A target that counts its connections and says which are still open. */
interface Target {
  url: URL;
  connections: Socket[];
  open(): number;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function target(handle: (req: IncomingMessage, res: ServerResponse) => void, keepAliveTimeoutMs = 65_000): Promise<Target> {
  const server = createServer(handle);
  server.keepAliveTimeout = keepAliveTimeoutMs;
  const connections: Socket[] = [];
  server.on("connection", (socket: Socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return {
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/doc`),
    connections,
    open: () => connections.filter((s) => !s.destroyed && !s.closed).length,
  };
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server's readers' GET, on node:http (createReadOnlyHttp without a fetch): what fetch gave, for less CPU. */
describe("the read-only HTTP capability on node:http", () => {
  it("answers status, body and headers by any case, and does not follow a redirect", async () => {
    const t = await target((req, res) => {
      if (req.url === "/moved") {
        res.writeHead(302, { location: "/doc" }).end();
        return;
      }
      res
        .writeHead(200, { "content-type": "application/json", etag: '"v7"' })
        .end(JSON.stringify({ seen: req.headers["authorization"], accept: req.headers["accept"] }));
    });
    const http = createReadOnlyHttp();
    const answer = await http.get(t.url, { authorization: "Bearer read" }, 10_000);
    expect(answer.status).toBe(200);
    expect(answer.truncated).toBe(false);
    expect(JSON.parse(answer.text)).toEqual({ seen: "Bearer read", accept: "application/json" });
    expect(answer.headers.get("ETag")).toBe('"v7"');
    expect(answer.headers.get("x-none")).toBeNull();
    const moved = await http.get(new URL("/moved", t.url), {}, 10_000);
    expect(moved.status).toBe(302);
    expect(moved.headers.get("location")).toBe("/doc");
  });

  it("cuts an answer past its cap and says so", async () => {
    const t = await target((_, res) => res.end("x".repeat(100_000)));
    const answer = await createReadOnlyHttp(undefined, 1000).get(t.url, {}, 10_000);
    expect(answer.truncated).toBe(true);
    expect(answer.text).toBe("x".repeat(1000));
  });

  it("rejects with fetch's TimeoutError at the deadline, before the answer and during its body", async () => {
    const silent = await target(() => undefined);
    const http = createReadOnlyHttp();
    const before = await http.get(silent.url, {}, 300).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(before?.name).toBe("TimeoutError");
    const stalled = await target((_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"partial":');
    });
    const during = await http.get(stalled.url, {}, 300).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(during?.name).toBe("TimeoutError");
    await until("the stalled connection closed", () => stalled.open() === 0, 30_000);
  });

  it("names a refused connection's code as the cause, as fetch did", async () => {
    const t = await target(() => undefined);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const err = await createReadOnlyHttp()
      .get(t.url, {}, 10_000)
      .then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: { code?: string } },
      );
    expect(err?.cause?.code).toBe("ECONNREFUSED");
  });

  it("keeps a connection while the target's Keep-Alive allows, less 1 s, and 4 s when the target says nothing", async () => {
    const long = await target((_, res) => res.end("{}"), 65_000); // node:http announces Keep-Alive: timeout=65
    const short = await target((_, res) => res.end("{}"), 2_000); // timeout=2: the client closes after ~1 s
    const silent = await target((_, res) => res.end("{}"), 0); // no timeout: node:http announces none and keeps it open
    const http = createReadOnlyHttp();
    for (const t of [long, short, silent]) {
      await http.get(t.url, {}, 10_000);
      await http.get(t.url, {}, 10_000);
      expect(t.connections).toHaveLength(1);
    }
    const started = Date.now();
    await until("the client to close the idle connection of a target announcing 2 s", () => short.open() === 0, 30_000);
    await until("the client to close the idle connection of a target announcing nothing", () => silent.open() === 0, 20_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000); // 4 s of idle, not at once
    // Past undici's 4 s default, a target announcing 65 s still has the first connection reused.
    expect(long.open()).toBe(1);
    await http.get(long.url, {}, 10_000);
    expect(long.connections).toHaveLength(1);
  });
});
