import { once } from "node:events";
import { request } from "node:http";

export const HUNDRED_MB = 100 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, "a");

export interface Sent {
  status: number;
  body: string;
  /** Bytes the client got onto the wire before the answer came (or the connection closed). */
  sentBytes: number;
  ms: number;
}

/**
 * POSTs `totalBytes` of filler as a real client would stream it: chunked, or with a declared
 * Content-Length. One 64 KiB buffer is reused, so the client itself allocates nothing per byte.
 * `prefix` goes first (a form's `_csrf=…&reason=`), so the filler lands inside a field. Writing
 * stops as soon as the server answers (or drops the connection).
 */
export async function streamPost(
  url: string,
  totalBytes: number,
  options: { chunked: boolean; headers?: Record<string, string>; prefix?: string },
): Promise<Sent> {
  const started = Date.now();
  const target = new URL(url);
  const req = request({
    host: target.hostname,
    port: target.port,
    path: target.pathname + target.search,
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(options.chunked ? {} : { "content-length": String(totalBytes) }), ...options.headers },
  });
  let sentBytes = 0;
  let answered = false;
  const answer = new Promise<Omit<Sent, "ms">>((resolve, reject) => {
    req.on("response", (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString("utf8"), sentBytes }));
      res.on("error", reject);
    });
    // After the answer, a reset of the rest of the upload is expected; before it, it is a failure.
    req.on("error", (err) => {
      if (!answered) reject(err);
    });
  });
  const closed = once(req, "close").catch(() => undefined);
  if (options.prefix) {
    const prefix = Buffer.from(options.prefix);
    sentBytes += prefix.length;
    req.write(prefix);
  }
  while (sentBytes < totalBytes && !answered && !req.destroyed) {
    const piece = totalBytes - sentBytes >= CHUNK.length ? CHUNK : CHUNK.subarray(0, totalBytes - sentBytes);
    sentBytes += piece.length;
    if (!req.write(piece)) await Promise.race([once(req, "drain"), answer.catch(() => undefined), closed]);
  }
  if (!answered && !req.destroyed) req.end();
  const result = await answer;
  req.destroy();
  return { ...result, ms: Date.now() - started };
}
