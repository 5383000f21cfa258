import { whyUnstorableText } from "../plan/storable.ts";
import { ServiceError } from "./errors.ts";

/** The longest reason a person may give for revoking or pausing, in characters (as for a rejection). */
export const MAX_STATED_REASON_CHARS = 2000;

/**
 * A reason a person must give (revoking a plan, pausing Countersign): trimmed, required, bounded
 * and storable, or a clear `invalid_request` naming what is wrong with it.
 */
export function statedReason(raw: string | undefined, why: string): string {
  const reason = raw?.trim() ?? "";
  const invalid = (message: string, detail: string) => new ServiceError("invalid_request", message, { issues: [{ path: "/reason", message: detail }] });
  if (!reason) throw invalid(`a reason is required: ${why}`, "required");
  const chars = [...reason].length;
  if (chars > MAX_STATED_REASON_CHARS) {
    throw invalid(`the reason is ${chars} characters; at most ${MAX_STATED_REASON_CHARS} are allowed`, `at most ${MAX_STATED_REASON_CHARS} characters (got ${chars})`);
  }
  const unstorable = whyUnstorableText(reason);
  if (unstorable) throw invalid(`the reason ${unstorable}`, unstorable);
  return reason;
}
