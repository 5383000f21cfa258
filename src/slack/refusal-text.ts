import { isUserGroup } from "../policy/approvers.ts";
import { ServiceError } from "../service/errors.ts";
import { whyNotRevocable } from "../service/access/index.ts";
import type { PlanStatus } from "../plan/schema.ts";
import { escapeMrkdwn, mention } from "./escape.ts";

/**
 * What a person who clicked is told when Countersign refused their decision. The one place a
 * refusal becomes Slack text; the rules themselves live in the service.
 */
export function refusalText(err: unknown): string {
  if (!(err instanceof ServiceError))
    return "Countersign could not record that decision because of an internal error; nothing changed. Try again, or use the plan page.";
  const details = err.details ?? {};
  switch (err.code) {
    case "plan_expired":
      return "This plan expired before your decision arrived; nothing was recorded. The agent has to submit it again.";
    case "already_decided":
      return `This plan is already ${String(details.status ?? "decided")}; your click changed nothing.`;
    case "already_voted":
      return "You already approved this plan; one person counts once.";
    case "hash_mismatch":
      return "The plan changed since this message was rendered, so your click was not counted. Open the plan page and review the current version.";
    case "self_approval":
      return "This plan was requested on your behalf, so someone else has to decide it.";
    case "not_an_approver": {
      const approvers = Array.isArray(details.approvers) ? (details.approvers as string[]) : [];
      // Groups are named, never mentioned: a <!subteam^…> would page the whole group.
      const who = approvers.map((a) => (isUserGroup(a) ? `members of user group ${escapeMrkdwn(a)}` : mention(a)));
      return `You are not an approver for this plan. It can be decided by: ${who.join(", ") || "nobody configured"}.`;
    }
    case "not_revocable":
      return `This plan cannot be revoked: ${whyNotRevocable(details.status as PlanStatus)}. Nothing changed.`;
    case "not_a_revoker":
      return "You may not revoke this plan: only the people who may decide it (not its requester) and admins may. Nothing changed.";
    case "target_changed":
      // Says what changed (masked as previews are) and that nothing was recorded.
      return `⚠️ ${escapeMrkdwn(err.message)}`;
    case "approver_check_failed":
      return "Countersign could not check your user group membership with Slack just now, so nothing was recorded. Try again shortly.";
    case "not_found":
      return "Countersign has no such plan (it may belong to another environment).";
    case "invalid_request":
      return `That decision was not valid: ${escapeMrkdwn(err.message)}`;
    default:
      return `Countersign refused that decision (${err.code}): ${escapeMrkdwn(err.message)}`;
  }
}
