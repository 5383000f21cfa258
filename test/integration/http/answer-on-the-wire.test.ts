import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { createApp } from "../../../src/server/app.ts";
import { requestIds } from "../../../src/http/request-id.ts";
import { pglite } from "../../support/databases.ts";
import { mergeRequest, silentLogger } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request over a real socket, so the headers are what went on the wire (fetch hides framing). */
function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? "GET", headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

function listen(fetch: (req: Request) => Response | Promise<Response>): Promise<ServerType> {
  return new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(server));
  });
}

const urlOf = (server: ServerType) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/**
 * The answer's X-Request-Id is set on the answer a handler made (src/http/request-id.ts), which
 * hono's `c.header()` would rebuild around a web stream; on the wire the answers keep their id,
 * Content-Length and body, also an answer passed on from fetch, whose headers cannot be changed.
 */
describe("answers on the wire", () => {
  const h = useHarness(pglite);
  let server: ServerType;
  let key: string;

  beforeAll(async () => {
    server = await listen(createApp(h.ctx).fetch);
    key = (await addAgent(h.ctx, { name: "wire-agent" })).key;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("a submit's 201 has its request id and a Content-Length, and is not chunked", async () => {
    const res = await send(`${urlOf(server)}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": "wire-submit-1" },
      body: JSON.stringify(mergeRequest({ title: "on the wire" })),
    });
    expect(res.status, res.body).toBe(201);
    expect(res.headers["x-request-id"]).toBe("wire-submit-1");
    expect(res.headers["transfer-encoding"]).toBeUndefined();
    expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.body));
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toMatchObject({ status: "pending", plan: { title: "on the wire" } });
  });

  it("an error answer has them too", async () => {
    const res = await send(`${urlOf(server)}/v1/plans`, {
      method: "POST",
      headers: { authorization: "Bearer nope", "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers["transfer-encoding"]).toBeUndefined();
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: "unauthorized" } });
  });

  it("the answer a handler made is the one sent, not rebuilt around a stream to add the id", async () => {
    const app = new Hono();
    app.use(requestIds(silentLogger));
    let made: Response | undefined;
    app.get("/made", (c) => (made = c.json({ made: true })));
    const res = await app.request("/made", { headers: { "x-request-id": "made-1" } });
    expect(res).toBe(made);
    expect(res.headers.get("x-request-id")).toBe("made-1");
    expect(await res.json()).toEqual({ made: true });
  });

  it("an answer passed on from fetch (immutable headers) still gets its request id", async () => {
    const upstream = await listen(() => new Response("from upstream", { headers: { "content-type": "text/plain" } }));
    const relay = new Hono();
    relay.use(requestIds(silentLogger));
    relay.get("/relay", () => fetch(`${urlOf(upstream)}/`));
    const front = await listen(relay.fetch);
    try {
      const res = await send(`${urlOf(front)}/relay`, { headers: { "x-request-id": "wire-relay-1" } });
      expect(res.status).toBe(200);
      expect(res.body).toBe("from upstream");
      expect(res.headers["x-request-id"]).toBe("wire-relay-1");
    } finally {
      await new Promise((resolve) => front.close(resolve));
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
