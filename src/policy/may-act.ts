import { hasExpired } from "../plan/lifecycle.ts";
import type { AppliedPolicy, PlanStatus } from "../plan/schema.ts";
import { names, type Person } from "./approvers.ts";

export type { Person } from "./approvers.ts";

/** What the rule needs to know about a plan: its state now and the policy recorded in it. */
export interface PlanFacts {
  status: PlanStatus;
  expiresAt: Date;
  hash: string;
  /** The people the plan asks for (plan/requesters.ts): never their own approvers. */
  requesters: readonly string[];
  policy: Pick<AppliedPolicy, "approvers" | "requiredApprovals">;
  /** People who have approved so far. */
  approvals: readonly string[];
}

/** Who may read plans, from the config: `browser.readers` (absent: anyone signed in) and `admins`. */
export interface ReadRights {
  readers: readonly string[] | undefined;
  admins: readonly string[];
}

/**
 * What a person wants to do. `decide` without a verdict or hash asks "would buttons work now"
 * (for doors showing them, and lists of what waits for someone); with them it is the decision
 * itself. `revoke` withdraws an approval no executor has taken yet.
 */
export type Act =
  | { verb: "decide"; verdict?: "approve" | "reject" | undefined; hash?: string | undefined }
  | { verb: "read"; rights: ReadRights }
  | { verb: "revoke"; admins: readonly string[] };

/** Why not, with the facts a door needs to say so in its own words. */
export type Refusal =
  | { code: "plan_expired"; expiresAt: Date }
  | { code: "already_decided"; status: PlanStatus }
  | { code: "hash_mismatch"; expected: string; got: string }
  | { code: "self_approval" }
  | { code: "not_an_approver"; approvers: readonly string[]; requiredApprovals: number }
  | { code: "already_voted"; approvals: readonly string[]; requiredApprovals: number }
  | { code: "not_a_reader" }
  /** Only an approved plan no executor has claimed can be revoked. */
  | { code: "not_revocable"; status: PlanStatus }
  | { code: "not_a_revoker"; approvers: readonly string[] };

export type RefusalCode = Refusal["code"];

/**
 * May this person do this to this plan now, and if not, why. The one statement of the rule:
 * `decide()` asks it inside its transaction, and every door asks it (through the service) to
 * show buttons, lists and explanations. Refusals come in a fixed order so every door gives the
 * same answer to the same click.
 */
export function whyMayNot(person: Person, plan: PlanFacts, act: Act, now: Date): Refusal | undefined {
  switch (act.verb) {
    case "decide":
      return whyMayNotDecide(person, plan, act, now);
    case "read":
      return whyMayNotRead(person, plan, act.rights);
    case "revoke":
      return whyMayNotRevoke(person, plan, act.admins);
  }
}

/**
 * Revoking is for an approved plan still waiting for an executor (a claimed one is being written
 * already; a final one has nothing left to stop), by someone who may decide it under its recorded
 * policy (an approver who is not the requester) or an admin.
 */
function whyMayNotRevoke(person: Person, plan: PlanFacts, admins: readonly string[]): Refusal | undefined {
  if (plan.status !== "approved") return { code: "not_revocable", status: plan.status };
  if (names(admins, person)) return undefined;
  if (plan.requesters.includes(person.userId) || !isApprover(person, plan)) return { code: "not_a_revoker", approvers: plan.policy.approvers };
  return undefined;
}

function whyMayNotDecide(person: Person, plan: PlanFacts, act: Extract<Act, { verb: "decide" }>, now: Date): Refusal | undefined {
  if (hasExpired(plan, now)) return { code: "plan_expired", expiresAt: plan.expiresAt };
  if (plan.status !== "pending") return { code: "already_decided", status: plan.status };
  if (act.hash !== undefined && act.hash !== plan.hash) return { code: "hash_mismatch", expected: plan.hash, got: act.hash };
  // A requester never decides their own request, whatever the approver list says.
  if (plan.requesters.includes(person.userId)) return { code: "self_approval" };
  if (!isApprover(person, plan)) return { code: "not_an_approver", approvers: plan.policy.approvers, requiredApprovals: plan.policy.requiredApprovals };
  // Rejecting after approving is allowed (a change of mind ends the plan); approving twice counts once, so it is refused.
  if (act.verdict !== "reject" && plan.approvals.includes(person.userId)) {
    return { code: "already_voted", approvals: plan.approvals, requiredApprovals: plan.policy.requiredApprovals };
  }
  return undefined;
}

/**
 * Admins read everything; approvers read the plans their policy names them for, whatever the
 * plan's state; beyond them, `browser.readers` narrows who else may (absent: anyone signed in).
 */
function whyMayNotRead(person: Person, plan: PlanFacts, rights: ReadRights): Refusal | undefined {
  if (names(rights.admins, person) || isApprover(person, plan)) return undefined;
  if (rights.readers === undefined || names(rights.readers, person)) return undefined;
  return { code: "not_a_reader" };
}

/** Named by the plan's recorded policy, by id or through a user group. */
function isApprover(person: Person, plan: Pick<PlanFacts, "policy">): boolean {
  return names(plan.policy.approvers, person);
}
