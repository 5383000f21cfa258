import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { readCappedBody } from "./read-capped-body.ts";

/**
 * The largest browser form Countersign reads. Its own forms carry a CSRF token, a hash and a
 * reason of at most a few thousand characters; nothing a person types needs more.
 */
export const MAX_FORM_BYTES = 64 * 1024;

export type FormRead = { ok: true; form: Record<string, string> } | { ok: false; status: 400 | 413 | 415; message: string };

const URLENCODED = "application/x-www-form-urlencoded";
const MULTIPART = "multipart/form-data";

/**
 * Whether a body declares itself over the form cap: the cheapest refusal, checked before the
 * session, so a 100 MB upload is answered before a byte of it is read.
 */
export function declaresTooLargeForm(c: Context): boolean {
  const declared = c.req.header("content-length");
  return declared !== undefined && /^\d+$/.test(declared) && Number(declared) > MAX_FORM_BYTES;
}

/** The answer to an oversized form: the rest of the body is not read and the connection closes. */
export const TOO_LARGE_FORM = `This form is larger than ${MAX_FORM_BYTES / 1024} KiB; shorten what you typed and try again. Nothing changed.`;

/**
 * The one reader of every browser form: at most MAX_FORM_BYTES are held, whatever the sender
 * declares or streams, and only then parsed (urlencoded as Countersign's pages send it, or
 * multipart without files). Each field appears once; a repeated field keeps its last value.
 */
export async function readForm(c: Context): Promise<FormRead> {
  if (declaresTooLargeForm(c)) return { ok: false, status: 413, message: TOO_LARGE_FORM };
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== URLENCODED && type !== MULTIPART) {
    return {
      ok: false,
      status: 415,
      message: `This form was sent as ${JSON.stringify(type || "no content type").slice(0, 80)}; Countersign's pages send ${URLENCODED}. Nothing changed.`,
    };
  }
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const read = await readCappedBody(incoming ?? c.req.raw.body, MAX_FORM_BYTES).catch(() => undefined);
  if (!read) return { ok: false, status: 400, message: "This form did not arrive whole; reload the page and try again. Nothing changed." };
  if (!read.ok) return { ok: false, status: 413, message: TOO_LARGE_FORM };
  const form: Record<string, string> = Object.create(null);
  if (type === URLENCODED) {
    for (const [key, value] of new URLSearchParams(read.body.toString("utf8"))) form[key] = value;
    return { ok: true, form };
  }
  // Parsed from the bytes already held, so the cap above bounds it as it bounds a urlencoded form.
  const parsed = await new Response(read.body, { headers: { "content-type": c.req.header("content-type")! } }).formData().catch(() => undefined);
  if (!parsed) return { ok: false, status: 400, message: "This form could not be read; reload the page and try again. Nothing changed." };
  for (const [key, value] of parsed) {
    if (typeof value !== "string")
      return { ok: false, status: 400, message: `This form carries a file in '${key.slice(0, 40)}'; Countersign's forms take text only. Nothing changed.` };
    form[key] = value;
  }
  return { ok: true, form };
}
