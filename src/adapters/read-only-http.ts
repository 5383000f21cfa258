import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";

/**
 * The only HTTP capability preview code is given: GET, with no redirects followed, a deadline
 * and a cap on what it reads. There is no method here that could write to a target, which is
 * what "preview has no write capability" means in code.
 */
export interface ReadOnlyHttp {
  get(url: URL, headers: Record<string, string>, timeoutMs: number): Promise<HttpAnswer>;
}

export interface HttpAnswer {
  status: number;
  /** The answer's headers, by name in any case (only `get` is needed: the ETag). */
  headers: Pick<Headers, "get">;
  /** The body as text, cut at `maxBytes` (then `truncated` is true). */
  text: string;
  truncated: boolean;
}

export const MAX_READ_BYTES = 1024 * 1024;

/**
 * What every read asks for, through either client. `identity`: a compressing proxy (nginx gzip,
 * Apache mod_deflate) weakens or suffixes the ETag of an answer it compresses, and fetch asks
 * for gzip by itself while node:http does not, so a preview read one way and a re-check read the
 * other would see two versions of one unchanged document and call every plan stale.
 */
const READ_HEADERS = { accept: "application/json", "accept-encoding": "identity" } as const;

/**
 * Without a `fetchImpl`, GETs go through node:http (the server's readers: every submit's preview,
 * the Approve re-check, the watcher). Node's fetch cost about twice the CPU per GET (undici's
 * Request, Response, Headers, AbortSignal wiring and web stream per request: ~420 against ~180 µs
 * of client CPU for a small JSON document, load 6), the largest single step of `serve`'s
 * intake path after its own database statements. The executor's reads take this path too (an
 * http.json adapter built without a fetch). A given `fetchImpl` (tests) is used as before.
 */
export function createReadOnlyHttp(fetchImpl?: typeof fetch, maxBytes = MAX_READ_BYTES, pools: NodeHttpPools = nodeHttpPools()): ReadOnlyHttp {
  if (!fetchImpl) return nodeReadOnlyHttp(maxBytes, pools);
  return {
    async get(url, headers, timeoutMs) {
      const signal = AbortSignal.timeout(timeoutMs);
      const send = () => fetchImpl(url, { method: "GET", headers: { ...READ_HEADERS, ...headers }, redirect: "manual", signal });
      // fetch reuses a kept-alive connection the target may be closing at that moment (a busy
      // client notices the target's idle timeout late; https://github.com/nodejs/undici/issues/3492):
      // the GET then fails before
      // any answer. A GET changes nothing, so it is sent once more (the closed connection has left
      // the pool), within the same deadline. The suite meets this as preview_failed ECONNRESET at load 8.
      const response = await send().catch((err: unknown) => (closedBeforeAnswer(err) && !signal.aborted ? send() : Promise.reject(err)));
      const { text, truncated } = await readCapped(response, maxBytes);
      return { status: response.status, headers: response.headers, text, truncated };
    },
  };
}

/** Codes of a connection closed under a request before its answer began. */
const CLOSED_BEFORE_ANSWER = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

function closedBeforeAnswer(err: unknown): boolean {
  const code = (err as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === "string" && CLOSED_BEFORE_ANSWER.has(code);
}

async function readCapped(response: Response, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: "", truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return { text: Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8"), truncated: true };
    }
  }
  return { text: Buffer.concat(chunks).toString("utf8"), truncated: false };
}

/** One protocol's kept-alive connections: the agent, and what each answer says about keeping its connection. */
export interface KeepAlivePool {
  agent: HttpAgent;
  noteAnswer(res: IncomingMessage): void;
}

/** Connection pools by URL protocol, for node:http clients. */
export type NodeHttpPools = Partial<Record<string, KeepAlivePool>>;

/**
 * Fresh pools for `http:` and `https:`. The executor's http.json reader and writer share one set,
 * so a PATCH goes out on the connection its revalidating GET just used (the freshest, the least
 * likely to be closing; `lifo`) instead of one idle since the last click.
 */
export function nodeHttpPools(): NodeHttpPools {
  return { "http:": keepAliveAgent(HttpAgent), "https:": keepAliveAgent(HttpsAgent) };
}

/** The idle time undici gives a kept-alive connection when the target announces none (4 s), kept so that both clients behave alike. */
const DEFAULT_KEEP_ALIVE_MS = 4_000;
/** undici's ceiling on a target's announced keep-alive (600 s). */
const MAX_KEEP_ALIVE_MS = 600_000;

/**
 * An agent that keeps an idle connection as long as the target's `Keep-Alive: timeout=N` says,
 * less 1 s, and 4 s when it says nothing: what undici (fetch) does, so a target's idle
 * connections live as long as before (the bench's target keeps them 65 s so that clicks seconds
 * apart reuse them). Node's agent alone keeps one without a hint until the target closes it.
 * `noteAnswer` reads the hint of each answer, before its connection goes back to the pool.
 */
function keepAliveAgent(Base: typeof HttpAgent | typeof HttpsAgent): KeepAlivePool {
  const idleMs = new WeakMap<Socket, number>();
  const agent = new Base({ keepAlive: true, scheduling: "lifo" }) as HttpAgent & { keepSocketAlive(socket: Socket): boolean };
  const keep = agent.keepSocketAlive.bind(agent);
  agent.keepSocketAlive = (socket: Socket) => {
    if (!keep(socket)) return false;
    socket.setTimeout(idleMs.get(socket) ?? DEFAULT_KEEP_ALIVE_MS);
    return true;
  };
  return {
    agent,
    noteAnswer(res) {
      const hint = /^\s*timeout=(\d+)/i.exec(String(res.headers["keep-alive"] ?? ""))?.[1];
      idleMs.set(res.socket, hint === undefined ? DEFAULT_KEEP_ALIVE_MS : Math.min(Math.max(Number(hint) * 1000 - 1000, 1), MAX_KEEP_ALIVE_MS));
    },
  };
}

function nodeReadOnlyHttp(maxBytes: number, pools: NodeHttpPools): ReadOnlyHttp {
  const once = (url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<HttpAnswer> =>
    new Promise((resolve, reject) => {
      const pool = pools[url.protocol];
      if (!pool) {
        reject(new TypeError(`GET ${url.origin} failed`, { cause: new Error(`unsupported protocol ${url.protocol}`) }));
        return;
      }
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      let settled = false;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        req.destroy();
        // The deadline's own error (a TimeoutError, as fetch rejects with); else fetch's shape: the socket's error as the cause.
        reject(signal.aborted ? signal.reason : new TypeError(`GET ${url.origin} failed`, { cause: err }));
      };
      const onAbort = () => fail(signal.reason);
      const req = send(url, { method: "GET", agent: pool.agent, headers: { ...READ_HEADERS, ...headers } }, (res) => {
        pool.noteAnswer(res);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          if (settled) return;
          chunks.push(chunk);
          size += chunk.byteLength;
          if (size > maxBytes) {
            settled = true;
            signal.removeEventListener("abort", onAbort);
            req.destroy();
            resolve({
              status: res.statusCode ?? 0,
              headers: headersOf(res),
              text: Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8"),
              truncated: true,
            });
          }
        });
        res.on("end", () => {
          if (settled) return;
          settled = true;
          signal.removeEventListener("abort", onAbort);
          resolve({ status: res.statusCode ?? 0, headers: headersOf(res), text: Buffer.concat(chunks).toString("utf8"), truncated: false });
        });
        res.on("error", fail);
        // Cut mid-answer: not the closed-before-answer case that is sent again (fetch's read failed there too).
        res.on("aborted", () => fail(Object.assign(new Error("the target closed the connection mid-answer"), { code: "ERR_STREAM_PREMATURE_CLOSE" })));
      });
      req.on("error", fail);
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      req.end();
    });
  return {
    async get(url, headers, timeoutMs) {
      const signal = AbortSignal.timeout(timeoutMs);
      // A kept-alive connection the target closes as the GET goes out fails before any answer
      // (node's "socket hang up", ECONNRESET): a GET changes nothing, so it is sent once more
      // within the same deadline, as with fetch above.
      return once(url, headers, signal).catch((err: unknown) =>
        closedBeforeAnswer(err) && !signal.aborted ? once(url, headers, signal) : Promise.reject(err),
      );
    },
  };
}

export function headersOf(res: IncomingMessage): Pick<Headers, "get"> {
  return {
    get(name: string) {
      const value = res.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
    },
  };
}
