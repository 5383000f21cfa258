/**
 * The floors' HTTP client for target reads and writes: node:http with a keep-alive agent, as the
 * product's own target reads (read-only-http.ts) and the executor's writes (node-http-client.ts)
 * use. Not fetch: it costs 2.5 ms from call to a cold PATCH's first byte against node:http's 0.4,
 * so a floor on fetch would be slower than the product's drivers allow and every ratio against it
 * would read too well.
 */
import { Agent, request } from "node:http";

const agent = new Agent({ keepAlive: true, scheduling: "lifo" });

export interface FloorAnswer {
  status: number;
  etag: string;
  body: string;
}

/** One request, its whole answer read; rejects on a connection error. */
export function floorRequest(url: string, init: { method?: string; headers: Record<string, string>; body?: string }): Promise<FloorAnswer> {
  return new Promise((resolve, reject) => {
    const sized = init.body === undefined ? {} : { "content-length": String(Buffer.byteLength(init.body)) };
    const req = request(url, { method: init.method ?? "GET", agent, headers: { "accept-encoding": "identity", ...init.headers, ...sized } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, etag: String(res.headers.etag ?? ""), body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

/** A floor's read of a target path with the read credential: refused unless 200; the body parsed. */
export async function getTarget(targetUrl: string, path: string, token: string): Promise<{ etag: string; body: unknown }> {
  const res = await floorRequest(`${targetUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`floor GET ${path} answered ${res.status}`);
  return { etag: res.etag, body: JSON.parse(res.body) as unknown };
}

/** A floor's write: a merge patch to a target path with the write credential, If-Match the read's ETag; refused unless 200. */
export async function patchTarget(targetUrl: string, path: string, token: string, etag: string, patch: unknown): Promise<void> {
  const res = await floorRequest(`${targetUrl}${path}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/merge-patch+json", "if-match": etag },
    body: JSON.stringify(patch),
  });
  if (res.status !== 200) throw new Error(`floor PATCH ${path} answered ${res.status}`);
}
