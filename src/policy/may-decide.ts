import type { AppliedPolicy } from "../plan/schema.ts";

export type DecisionRefusal = "self_approval" | "not_an_approver";

/**
 * Whether this person may decide on a plan under the policy recorded in it. The person the
 * agent acts for never decides their own request, whatever the approver list says.
 */
export function whyMayNotDecide(
  userId: string,
  plan: { onBehalfOf?: string | undefined; policy: AppliedPolicy },
): DecisionRefusal | undefined {
  if (plan.onBehalfOf !== undefined && plan.onBehalfOf === userId) return "self_approval";
  if (!plan.policy.approvers.includes(userId)) return "not_an_approver";
  return undefined;
}

/** Whether the approvals so far (distinct people) meet the quorum. */
export function quorumMet(approvers: readonly string[], policy: AppliedPolicy): boolean {
  return new Set(approvers).size >= policy.requiredApprovals;
}
