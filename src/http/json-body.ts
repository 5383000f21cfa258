import { parseFaithfulJson } from "../plan/faithful-json.ts";
import { LIMITS } from "../plan/schema.ts";
import { ServiceError } from "../service/errors.ts";

/** Past this, an oversized body is cut off rather than read to the end to answer politely. */
const DRAIN_LIMIT = 32 * 1024 * 1024;

/** `application/json`, with or without parameters such as `charset=utf-8`. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/**
 * Reads a JSON request body of at most `maxBytes`: the one parser for every JSON API door
 * (agent, executor, admin), so each refuses bad input the same way and none reaches a 500.
 * An oversized body is still drained (up to DRAIN_LIMIT) before the 413, so an ordinary client
 * that sends it all reads the answer instead of a reset connection. Numbers a double cannot hold
 * exactly are refused (see faithful-json.ts).
 */
export async function readJsonBody(request: Request, options: { what: string; maxBytes?: number; requireJsonType?: boolean }): Promise<unknown> {
  const maxBytes = options.maxBytes ?? LIMITS.maxBodyBytes;
  if (options.requireJsonType && !isJsonMediaType(request.headers.get("content-type") ?? undefined)) {
    throw new ServiceError(
      "unsupported_media_type",
      `${options.what} must be sent with Content-Type: application/json (got ${JSON.stringify(request.headers.get("content-type") ?? "none").slice(0, 80)})`,
    );
  }
  const declared = declaredLength(request);
  if (declared !== undefined && declared <= maxBytes) {
    // Node's parser holds a body to its Content-Length, so this read is bounded. arrayBuffer() of
    // @hono/node-server's request reads the socket directly; touching `body` builds a whole fetch
    // Request and a web stream around it first (~7 % of the server's CPU at intake).
    return parseBody(new Uint8Array(await request.arrayBuffer()), options.what);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size <= maxBytes) chunks.push(value);
      else if (size > DRAIN_LIMIT) {
        await reader.cancel();
        break;
      }
    }
  }
  if (size > maxBytes) {
    throw new ServiceError("payload_too_large", `${options.what} is larger than ${maxBytes / 1024} KiB; split the plan or shrink its bodies`);
  }
  return parseBody(Buffer.concat(chunks), options.what);
}

/** The body's Content-Length when it states one (a chunked body does not). */
function declaredLength(request: Request): number | undefined {
  const header = request.headers.get("content-length");
  return header !== null && /^\d{1,15}$/.test(header) ? Number(header) : undefined;
}

function parseBody(bytes: Uint8Array, what: string): unknown {
  let text: string;
  try {
    // Fatal: a replacement character would show reviewers something the agent never sent.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ServiceError("invalid_json", `${what} is not valid UTF-8`);
  }
  const parsed = parseFaithfulJson(text);
  if (parsed.ok) return parsed.value;
  if (parsed.kind === "syntax") throw new ServiceError("invalid_json", `${what} is not valid JSON: ${parsed.message}`);
  throw new ServiceError("invalid_request", `${what} is not valid: ${parsed.pointer || "/"} ${parsed.message}`, {
    issues: [{ path: parsed.pointer, message: parsed.message }],
  });
}
