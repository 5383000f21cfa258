import type { AppliedPolicy } from "../plan/schema.ts";

/**
 * Slack user group ids start with S (user ids with U or W): the one place that tells them apart.
 * A group's members are only known by asking Slack, at the moment someone acts.
 */
export function isUserGroup(id: string): boolean {
  return id.startsWith("S");
}

/** The user groups named in a list of people and groups. */
export function userGroupsIn(ids: readonly string[]): string[] {
  return ids.filter(isUserGroup);
}

/** Slack user group ids among a policy's approvers: their members are looked up at decision time. */
export function approverGroups(policy: Pick<AppliedPolicy, "approvers">): string[] {
  return userGroupsIn(policy.approvers);
}

/**
 * Someone who acts, as far as the rules need to know: their user id and the user groups they
 * were found in just now (only groups the question names need to have been looked up).
 */
export interface Person {
  userId: string;
  memberOf: readonly string[];
  /** The people who delegated their approvals to this person, for the plan in question (src/policy/may-act.ts). */
  actsFor?: readonly Delegator[] | undefined;
}

/**
 * Someone away who delegated their approvals: who, the user groups they were found in just now
 * (they act with the delegator's rights, not the delegate's), and when the delegation stops (its
 * last day's end, or the moment it was ended early).
 */
export interface Delegator {
  userId: string;
  memberOf: readonly string[];
  endsAt: Date;
}

/** Whether a list of people and groups names this person, by id or through a group they are in. */
export function names(list: readonly string[], person: Person): boolean {
  return list.includes(person.userId) || person.memberOf.some((g) => isUserGroup(g) && list.includes(g));
}

/** Whether the approvals so far (distinct people) meet the quorum. */
export function quorumMet(approvers: readonly string[], policy: Pick<AppliedPolicy, "requiredApprovals">): boolean {
  return new Set(approvers).size >= policy.requiredApprovals;
}
