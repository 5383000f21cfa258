import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { floorRequest, getTarget, patchTarget } from "../../../bench/floor-http.ts";

/** The floors' target client: what it sends and what it reads back, against a real server. */
describe("floorRequest (bench floors' node:http client)", () => {
  let server: Server;
  let url: string;
  const seen: { method: string; headers: Record<string, unknown>; body: string; socket: number }[] = [];
  const sockets = new Map<unknown, number>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        if (!sockets.has(req.socket)) sockets.set(req.socket, sockets.size);
        seen.push({ method: req.method ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), socket: sockets.get(req.socket)! });
        res.writeHead(req.method === "PATCH" ? 412 : 200, { etag: '"v7"', "content-type": "application/json" }).end(JSON.stringify({ path: req.url }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("GETs with the given headers and identity encoding, and returns status, ETag and the whole body", async () => {
    const answer = await floorRequest(`${url}/contacts/3`, { headers: { authorization: "Bearer read" } });
    expect(answer).toEqual({ status: 200, etag: '"v7"', body: JSON.stringify({ path: "/contacts/3" }) });
    expect(seen.at(-1)).toMatchObject({ method: "GET", headers: { authorization: "Bearer read", "accept-encoding": "identity" } });
  });

  // node:http would set a length by itself; the multi-byte "é" makes a character count (body.length) differ.
  it("sends a body with its byte length and reports a refusal's status rather than throwing", async () => {
    const body = JSON.stringify({ email: "é@new.example" });
    const answer = await floorRequest(`${url}/contacts/3`, { method: "PATCH", headers: { "if-match": '"v7"' }, body });
    expect(answer.status).toBe(412);
    expect(seen.at(-1)).toMatchObject({ method: "PATCH", body, headers: { "if-match": '"v7"', "content-length": String(Buffer.byteLength(body)) } });
  });

  // Node 20's global agent keeps connections alive too: this pins that the floor's requests reuse
  // one (an agent with keepAlive off fails it), not which agent they come from.
  it("keeps its connection alive between requests, as the product's clients do", async () => {
    const before = seen.length;
    await floorRequest(`${url}/a`, { headers: {} });
    await floorRequest(`${url}/b`, { headers: {} });
    const [first, second] = seen.slice(before);
    expect(second!.socket).toBe(first!.socket);
  });

  it("reads a target as the floors do (body parsed, ETag kept) and refuses a write the target refuses, naming it", async () => {
    expect(await getTarget(url, "/contacts/9", "read")).toEqual({ etag: '"v7"', body: { path: "/contacts/9" } });
    await expect(patchTarget(url, "/contacts/9", "write", '"v7"', { email: "x@new.example" })).rejects.toThrow("floor PATCH /contacts/9 answered 412");
    expect(seen.at(-1)).toMatchObject({
      method: "PATCH",
      body: JSON.stringify({ email: "x@new.example" }),
      headers: { authorization: "Bearer write", "if-match": '"v7"', "content-type": "application/merge-patch+json" },
    });
  });

  it("rejects when nothing listens", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(floorRequest(`http://127.0.0.1:${port}/`, { headers: {} })).rejects.toThrow(/ECONNREFUSED/);
  });
});
