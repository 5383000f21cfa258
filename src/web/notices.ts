import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";
import { ServiceError } from "../service/errors.ts";

export interface Notice {
  kind: "ok" | "bad";
  text: string;
}

const REFUSAL_TEXT: Partial<Record<string, string>> = {
  plan_expired: "This plan expired before your decision arrived; nothing was recorded.",
  already_decided: "This plan was already decided; your decision changed nothing.",
  already_voted: "You already approved this plan; one person counts once.",
  hash_mismatch: "The plan changed since this page was loaded, so your decision was not counted. Review the current version below.",
  self_approval: "This plan was requested on your behalf, or you edited it or asked for it, so someone else must decide it.",
  not_an_approver: "You are not an approver for this plan; nothing was recorded.",
  approver_check_failed: "Countersign could not check your user group membership with Slack just now, so nothing was recorded. Try again shortly.",
};

/**
 * A refused decision as the browser shows it: the one place a refusal becomes page text and a
 * status. Only the response to the refused POST carries it (never a URL), so it reaches the
 * person who caused it and nobody else, and a crafted link cannot make a page claim anything.
 * Undefined for errors that are not a decision's refusal (not_found, faults).
 */
export function refusalOf(err: unknown): { status: ContentfulStatusCode; notice: Notice } | undefined {
  if (!(err instanceof ServiceError)) return undefined;
  // A refusal about someone acted for (a delegation) says whom, in the service's words.
  const aboutAnother = err.details?.for !== undefined || err.details?.counted !== undefined;
  const text = (aboutAnother ? undefined : REFUSAL_TEXT[err.code]) ?? (err.code === "not_found" ? undefined : err.message);
  return text === undefined ? undefined : { status: HTTP_STATUS_OF[err.code] ?? 400, notice: { kind: "bad", text } };
}
