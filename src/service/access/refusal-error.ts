import { shortHash } from "../../plan/fingerprint.ts";
import type { Refusal } from "../../policy/may-act.ts";
import type { PlanStatus } from "../../plan/schema.ts";
import { ServiceError } from "../errors.ts";

/**
 * The rule's refusal as the service's typed error: the code stays the same, the message is the
 * service's plain statement (each door words it its own way from the code and details).
 */
export function refusalError(refusal: Refusal): ServiceError {
  switch (refusal.code) {
    case "plan_expired":
      return new ServiceError(
        "plan_expired",
        `this plan expired at ${refusal.expiresAt.toISOString()}; nothing was recorded. The agent must submit it again.`,
        { details: { expiresAt: refusal.expiresAt.toISOString() } },
      );
    case "already_decided":
      return new ServiceError("already_decided", `this plan is already ${refusal.status}; nothing was recorded`, { details: { status: refusal.status } });
    case "hash_mismatch":
      return new ServiceError(
        "hash_mismatch",
        `you decided on plan version ${shortHash(refusal.got)}, but the plan is ${shortHash(refusal.expected)}; reload it and review what changed`,
        { details: { expected: refusal.expected, got: refusal.got } },
      );
    case "self_approval":
      return refusal.for
        ? new ServiceError("self_approval", `this plan was requested on behalf of ${refusal.for}, for whom you act, so someone else must decide it`, {
            details: { for: refusal.for },
          })
        : new ServiceError("self_approval", "this plan was requested on your behalf, or you edited it or asked for it, so someone else must decide it");
    case "not_an_approver":
      return new ServiceError(
        "not_an_approver",
        `you may not decide this plan; it needs ${refusal.requiredApprovals} approval(s) from: ${refusal.approvers.join(", ")}`,
        { details: { approvers: [...refusal.approvers] } },
      );
    case "already_voted":
      return new ServiceError(
        "already_voted",
        refusal.counted
          ? `${refusal.counted} already counts toward this plan's approvals (they approved, or someone approved for them); one person counts once`
          : "you already approved this plan; one person counts once",
        {
          details: {
            approvals: [...refusal.approvals],
            requiredApprovals: refusal.requiredApprovals,
            ...(refusal.counted ? { counted: refusal.counted } : {}),
          },
        },
      );
    case "delegation_ended":
      return new ServiceError(
        "delegation_ended",
        `your delegation from ${refusal.delegator} ended at ${refusal.endsAt.toISOString()}, before your click was recorded; nothing was recorded`,
        { details: { delegator: refusal.delegator, endsAt: refusal.endsAt.toISOString() } },
      );
    case "not_a_reader":
      return new ServiceError("not_a_reader", "you may not read this plan: only its approvers, admins and the people in browser.readers may");
    case "not_revocable":
      return new ServiceError("not_revocable", `this plan cannot be revoked: ${whyNotRevocable(refusal.status)}; nothing was changed`, {
        details: { status: refusal.status },
      });
    case "not_a_revoker":
      return new ServiceError(
        "not_a_revoker",
        `you may not revoke this plan: only those who may decide it (${refusal.approvers.join(", ")}, not its requester) and admins may`,
        { details: { approvers: [...refusal.approvers] } },
      );
  }
}

/** Why a plan in this status cannot be revoked, in words every door can show. */
export function whyNotRevocable(status: PlanStatus): string {
  switch (status) {
    case "executing":
      return "an executor has already taken it";
    case "pending":
      return "it is not approved yet (reject it instead)";
    case "revoked":
      return "it is already revoked";
    default:
      return `it is already ${status}, which is final`;
  }
}
