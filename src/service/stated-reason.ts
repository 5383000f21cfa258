import { whyUnstorableText } from "../plan/storable.ts";
import { ServiceError } from "./errors.ts";

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
  const chars = [...reason].length;
  if (chars > MAX_STATED_REASON_CHARS) {
    throw invalidReason(`the reason is ${chars} characters; at most ${MAX_STATED_REASON_CHARS} are allowed`, `at most ${MAX_STATED_REASON_CHARS} characters (got ${chars})`);
  }
  const unstorable = whyUnstorableText(reason);
  if (unstorable) throw invalidReason(`the reason ${unstorable}`, unstorable);
  return reason;
}
