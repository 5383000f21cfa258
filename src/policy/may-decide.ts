import type { AppliedPolicy } from "../plan/schema.ts";

export type DecisionRefusal = "self_approval" | "not_an_approver";

/** Slack user group ids among a policy's approvers: their members are looked up at decision time. */
export function approverGroups(policy: Pick<AppliedPolicy, "approvers">): string[] {
  return policy.approvers.filter((a) => a.startsWith("S"));
}

/**
 * Whether this person may decide on a plan under the policy recorded in it: listed by id, or a
 * member of a listed group (`memberOf`, the groups they were found in just now). The person the
 * agent acts for never decides their own request, whatever the approver list says.
 */
export function whyMayNotDecide(
  userId: string,
  plan: { onBehalfOf?: string | undefined; policy: AppliedPolicy },
  memberOf: readonly string[] = [],
): DecisionRefusal | undefined {
  if (plan.onBehalfOf !== undefined && plan.onBehalfOf === userId) return "self_approval";
  if (!plan.policy.approvers.includes(userId) && !memberOf.some((g) => plan.policy.approvers.includes(g))) return "not_an_approver";
  return undefined;
}

/** Whether the approvals so far (distinct people) meet the quorum. */
export function quorumMet(approvers: readonly string[], policy: AppliedPolicy): boolean {
  return new Set(approvers).size >= policy.requiredApprovals;
}
