import { ServiceError } from "../service/errors.ts";

/** What the browser tells a person after a decision: the one place a refusal becomes page text. */
export function noticeFor(code: string): { kind: "ok" | "bad"; text: string } | undefined {
  switch (code) {
    case "approved": return { kind: "ok", text: "Your approval is recorded." };
    case "rejected": return { kind: "ok", text: "Your rejection is recorded." };
    case "plan_expired": return { kind: "bad", text: "This plan expired before your decision arrived; nothing was recorded." };
    case "already_decided": return { kind: "bad", text: "This plan was already decided; your decision changed nothing." };
    case "already_voted": return { kind: "bad", text: "You already approved this plan; one person counts once." };
    case "hash_mismatch": return { kind: "bad", text: "The plan changed since this page was loaded, so your decision was not counted. Review the current version below." };
    case "self_approval": return { kind: "bad", text: "This plan was requested on your behalf, so someone else must decide it." };
    case "not_an_approver": return { kind: "bad", text: "You are not an approver for this plan; nothing was recorded." };
    case "approver_check_failed": return { kind: "bad", text: "Countersign could not check your user group membership with Slack just now, so nothing was recorded. Try again shortly." };
    case "invalid_request": return { kind: "bad", text: "A rejection needs a reason; nothing was recorded." };
    default: return undefined;
  }
}

export function noticeCodeOf(err: unknown): string {
  return err instanceof ServiceError ? err.code : "internal";
}
