import { approverGroups } from "../policy/may-decide.ts";
import type { AppliedPolicy } from "../plan/schema.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";

/** Where user group membership comes from (Slack's usergroups.users.list), behind a small port. */
export interface ApproverDirectory {
  membersOf(groupId: string): Promise<readonly string[]>;
}

/**
 * The approver groups of this policy that `userId` belongs to, looked up now. A directory that
 * cannot answer refuses the decision (`approver_check_failed`): an outage never lets anyone in.
 */
export async function groupsOfApprover(ctx: Pick<ServiceContext, "directory">, userId: string, policy: Pick<AppliedPolicy, "approvers">): Promise<string[]> {
  const groups = approverGroups(policy);
  if (groups.length === 0 || policy.approvers.includes(userId)) return [];
  if (!ctx.directory) {
    throw new ServiceError("approver_check_failed", `this plan's approvers include user groups (${groups.join(", ")}), which need Slack to look up; nothing was recorded`);
  }
  const memberOf: string[] = [];
  for (const group of groups) {
    let members: readonly string[];
    try {
      members = await ctx.directory.membersOf(group);
    } catch (err) {
      throw new ServiceError("approver_check_failed", `could not check whether you are in user group ${group} (${(err as Error).message}); nothing was recorded, try again shortly`);
    }
    if (members.includes(userId)) memberOf.push(group);
  }
  return memberOf;
}
