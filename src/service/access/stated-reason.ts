import { whyUnstorableText } from "../../plan/storable.ts";
import { ServiceError } from "../errors.ts";

/** The longest reason a person may give (rejecting, revoking, pausing), in characters. */
export const MAX_STATED_REASON_CHARS = 2000;

const invalidReason = (message: string, detail: string) => new ServiceError("invalid_request", message, { issues: [{ path: "/reason", message: detail }] });

/**
 * A reason a person must give (revoking a plan, pausing Countersign): trimmed, required, bounded
 * and storable, or a clear `invalid_request` naming what is wrong with it.
 */
export function statedReason(raw: string | undefined, why: string): string {
  const reason = raw?.trim() ?? "";
  if (!reason) throw invalidReason(`a reason is required: ${why}`, "required");
  return boundedReason(reason);
}

/** The one bound on any reason a person gives: at most MAX_STATED_REASON_CHARS characters, and storable. */
export function boundedReason(reason: string): string {
  const chars = codePointCount(reason);
  if (chars > MAX_STATED_REASON_CHARS) {
    throw invalidReason(
      `the reason is ${chars} characters; at most ${MAX_STATED_REASON_CHARS} are allowed`,
      `at most ${MAX_STATED_REASON_CHARS} characters (got ${chars})`,
    );
  }
  const unstorable = whyUnstorableText(reason);
  if (unstorable) throw invalidReason(`the reason ${unstorable}`, unstorable);
  return reason;
}

/**
 * The number of code points in `text`, counted by scanning: a bound is never checked by building
 * an array of the input, which costs a heap slot per character.
 */
export function codePointCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}
