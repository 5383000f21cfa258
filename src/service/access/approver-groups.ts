import { approverGroups } from "../../policy/approvers.ts";
import type { AppliedPolicy } from "../../plan/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";

/** The groups (of those asked about) a person is in, and those nobody could answer for just now. */
export interface Membership {
  memberOf: string[];
  unchecked: { group: string; error: string }[];
}

/**
 * Which of `groups` this person is in, looked up now. A group the directory cannot answer for
 * (or every group, without Slack) is `unchecked`: callers treat it as "not a member" and say so.
 */
export async function membershipOf(ctx: Pick<ServiceContext, "directory">, userId: string, groups: readonly string[]): Promise<Membership> {
  const membership: Membership = { memberOf: [], unchecked: [] };
  for (const group of new Set(groups)) {
    if (!ctx.directory) {
      membership.unchecked.push({ group, error: "Slack is not connected" });
      continue;
    }
    try {
      if ((await ctx.directory.membersOf(group)).includes(userId)) membership.memberOf.push(group);
    } catch (err) {
      membership.unchecked.push({ group, error: (err as Error).message });
    }
  }
  return membership;
}

/**
 * The approver groups of this policy that `userId` belongs to, looked up now (nothing to look up
 * for someone the policy names by id), and those Slack could not answer for.
 */
export async function approverMembershipOf(
  ctx: Pick<ServiceContext, "directory">,
  userId: string,
  policy: Pick<AppliedPolicy, "approvers">,
): Promise<Membership> {
  if (policy.approvers.includes(userId)) return { memberOf: [], unchecked: [] };
  return membershipOf(ctx, userId, approverGroups(policy));
}

/** A decision that only an unanswered group lookup could have allowed: refused, never let in. */
export function approverCheckFailed(ctx: Pick<ServiceContext, "directory">, unchecked: Membership["unchecked"]): ServiceError {
  if (!ctx.directory) {
    return new ServiceError(
      "approver_check_failed",
      `this plan's approvers include user groups (${unchecked.map((u) => u.group).join(", ")}), which need Slack to look up; nothing was recorded`,
    );
  }
  const failed = unchecked[0]!;
  return new ServiceError(
    "approver_check_failed",
    `could not check whether you are in user group ${failed.group} (${failed.error}); nothing was recorded, try again shortly`,
  );
}
