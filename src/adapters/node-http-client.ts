import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { headersOf, type NodeHttpPools } from "./read-only-http.ts";

/**
 * The part of fetch the executor uses for its writes and its calls to the server: the call, and
 * what it reads of the answer. `fetch` is one (tests pass it); `nodeHttpClient` is the other.
 */
export type HttpClient = (
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: string; redirect: "manual"; signal?: AbortSignal },
) => Promise<HttpClientAnswer>;

export interface HttpClientAnswer {
  status: number;
  ok: boolean;
  headers: Pick<Headers, "get">;
  /** The whole body, decoded; rejects when it breaks off or the signal aborts first. */
  text(): Promise<string>;
}

/**
 * fetch's shape on node:http. The executor runs cold (clicks come seconds apart): from the call to
 * a small PATCH's first byte on the wire, node's fetch took 2.5 ms and this 0.4 (medians of 24
 * clicks, timestamped executor, load 2–4; docs/notes/executor.md). What fetch did
 * and this keeps: no redirect is followed (node:http follows none), the signal ends the request
 * at any point and it rejects with the signal's reason (a TimeoutError for AbortSignal.timeout),
 * a connection error rejects as a TypeError with the socket's error as `cause`, and a compressed
 * answer is decoded (this asks for identity, as the reads do, but decodes what a target
 * compresses anyway, as fetch did).
 *
 * Nothing is sent twice. node's agent does not resend a request whose kept-alive connection the
 * peer closed under it (for a PATCH, undici does not either): the call rejects, and a write is
 * then `uncertain` (http-json-apply.ts), settled by a re-read. Unlike the GET in
 * read-only-http.ts, no caller here tries again on a fresh connection: the bytes may have reached
 * the target before it closed, and no client can tell.
 */
export function nodeHttpClient(pools: NodeHttpPools): HttpClient {
  return (url, { method, headers, body, signal }) =>
    new Promise((resolve, reject) => {
      const pool = pools[url.protocol];
      if (!pool) {
        reject(new TypeError(`${method} ${url.origin} failed`, { cause: new Error(`unsupported protocol ${url.protocol}`) }));
        return;
      }
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      const sized = body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) };
      let answered = false;
      const onAbort = () => req.destroy(signal?.reason as Error);
      const req = send(url, { method, agent: pool.agent, headers: { "accept-encoding": "identity", ...headers, ...sized } }, (res) => {
        answered = true;
        pool.noteAnswer(res);
        // Read now, whether or not text() is called, so the connection goes back to the pool.
        const whole = readWhole(res, signal).finally(() => signal?.removeEventListener("abort", onAbort));
        whole.catch(() => undefined);
        const status = res.statusCode ?? 0;
        resolve({ status, ok: status >= 200 && status < 300, headers: headersOf(res), text: () => whole });
      });
      req.on("error", (err) => {
        signal?.removeEventListener("abort", onAbort);
        // Once the answer began, readWhole reports the failure through text().
        if (!answered) reject(signal?.aborted ? signal.reason : new TypeError(`${method} ${url.origin} failed`, { cause: err }));
      });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
      req.end(body);
    });
}

/** Content codings fetch decodes, by name. */
const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** An answer's body as text, through the decoders its Content-Encoding names (the last applied first). */
function readWhole(res: IncomingMessage, signal: AbortSignal | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    let done = false;
    const fail = (err: unknown) => {
      if (done) return;
      done = true;
      reject(signal?.aborted ? signal.reason : err);
    };
    const codings = String(res.headers["content-encoding"] ?? "")
      .toLowerCase()
      .split(",")
      .map((c) => c.trim())
      .filter((c) => c !== "" && c !== "identity");
    let stream: Readable = res;
    for (const coding of codings.reverse()) {
      const decoder = DECODERS[coding];
      // An unknown coding is left as it came, as fetch leaves it.
      if (!decoder) break;
      stream = stream.pipe(decoder()) as unknown as Readable;
      stream.on("error", fail);
    }
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    res.on("error", fail);
    // Cut mid-answer: the peer closed, or the signal destroyed the request.
    const cut = () => fail(Object.assign(new Error("the connection closed mid-answer"), { code: "ERR_STREAM_PREMATURE_CLOSE" }));
    res.on("aborted", cut);
    res.on("close", () => {
      if (!res.complete) cut();
    });
  });
}
