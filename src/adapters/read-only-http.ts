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
  headers: Headers;
  /** The body as text, cut at `maxBytes` (then `truncated` is true). */
  text: string;
  truncated: boolean;
}

export const MAX_READ_BYTES = 1024 * 1024;

export function createReadOnlyHttp(fetchImpl: typeof fetch = fetch, maxBytes = MAX_READ_BYTES): ReadOnlyHttp {
  return {
    async get(url, headers, timeoutMs) {
      const signal = AbortSignal.timeout(timeoutMs);
      const send = () => fetchImpl(url, { method: "GET", headers: { accept: "application/json", ...headers }, redirect: "manual", signal });
      // fetch reuses a kept-alive connection the target may be closing at that moment (undici
      // #3492; a busy client notices the target's idle timeout late): the GET then fails before
      // any answer. A GET changes nothing, so it is sent once more (the closed connection has left
      // the pool), within the same deadline. The suite met this as preview_failed ECONNRESET at load 8.
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
