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
      if (typeof details.counted === "string")
        return `${mention(details.counted)} already counts toward this plan (they approved, or someone approved for them); one person counts once, so nothing was recorded.`;
      return "You already approved this plan; one person counts once.";
    case "delegation_ended":
      return `Your delegation from ${mention(String(details.delegator ?? ""))} ended before your click was recorded; nothing was recorded.`;
    case "hash_mismatch":
      // An edit of a version that an edit or a re-plan replaced meanwhile.
      if (details.supersededBy)
        return "This plan was replaced by a newer version since you opened it, so nothing was edited. Review the newer version in the thread.";
      return "The plan changed since this message was rendered, so your click was not counted. Open the plan page and review the current version.";
    case "self_approval":
      if (typeof details.for === "string")
        return `This plan was requested on behalf of ${mention(details.for)}, for whom you act, so someone else has to decide it.`;
      return "This plan was requested on your behalf, or you edited it or asked for it, so someone else has to decide it.";
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
    case "undo_open": {
      const link = typeof details.reviewUrl === "string" ? `<${details.reviewUrl}|that undo>` : "that undo";
      return `An undo of this plan is already ${escapeMrkdwn(String(details.status ?? "open"))}: review ${link} instead. Nothing new was proposed.`;
    }
    case "not_undoable":
    case "undo_target_changed":
    case "undo_refused":
      return `No undo was proposed: ${escapeMrkdwn(err.message)}`;
    case "not_found":
      return "Countersign has no such plan (it may belong to another environment).";
    case "not_editable":
      return `You cannot edit this plan: ${escapeMrkdwn(err.message)}.`;
    case "invalid_request":
      return `That was not valid: ${escapeMrkdwn(err.message)}`;
    default:
      return `Countersign refused that (${err.code}): ${escapeMrkdwn(err.message)}`;
  }
}
