import { hasExpired } from "../plan/lifecycle.ts";
import type { AppliedPolicy, PlanStatus } from "../plan/schema.ts";
import { names, type Delegator, type Person } from "./approvers.ts";

export type { Delegator, Person } from "./approvers.ts";

/** What the rule needs to know about a plan: its state now and the policy recorded in it. */
export interface PlanFacts {
  status: PlanStatus;
  expiresAt: Date;
  hash: string;
  /** The people the plan asks for (plan/requesters.ts): never their own approvers. */
  requesters: readonly string[];
  policy: Pick<AppliedPolicy, "approvers" | "requiredApprovals" | "delegation">;
  /** People who have approved so far (who clicked). */
  approvals: readonly string[];
  /** People those approvals were made for, through a delegation: each counts once, as the clickers do. */
  actedFor?: readonly string[] | undefined;
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
  /** `for`: the delegator the person means to act for; absent, the rule takes the first way they may (themselves first). */
  | { verb: "decide"; verdict?: "approve" | "reject" | undefined; hash?: string | undefined; for?: string | undefined }
  | { verb: "read"; rights: ReadRights }
  | { verb: "revoke"; admins: readonly string[] }
  /** Propose taking an applied plan back: `deciders` may decide plans on its targets under the config now. */
  | { verb: "undo"; admins: readonly string[]; deciders: readonly string[] };

/** Why not, with the facts a door needs to say so in its own words. */
export type Refusal =
  | { code: "plan_expired"; expiresAt: Date }
  | { code: "already_decided"; status: PlanStatus }
  | { code: "hash_mismatch"; expected: string; got: string }
  /** `for`: the requester the person would have acted for, through a delegation. */
  | { code: "self_approval"; for?: string | undefined }
  | { code: "not_an_approver"; approvers: readonly string[]; requiredApprovals: number }
  /** `counted`: who would count twice when it is not the clicker (the person acted for). */
  | { code: "already_voted"; approvals: readonly string[]; requiredApprovals: number; counted?: string | undefined }
  /** The delegation the person acted through ended before the click was recorded. */
  | { code: "delegation_ended"; delegator: string; endsAt: Date }
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
 *
 * A person may also act for those who delegated their approvals to them (`person.actsFor`), with
 * the delegator's rights and never beyond them: not for a requester, not twice for one person,
 * not once the delegation has ended, and not where the plan's policy says `delegation: false`.
 */
export function whyMayNot(person: Person, plan: PlanFacts, act: Act, now: Date): Refusal | undefined {
  switch (act.verb) {
    case "decide":
      return judgeDecide(person, plan, act, now).refusal;
    case "read":
      return whyMayNotRead(person, plan, act.rights, now);
    case "revoke":
      return judgeRevoke(person, plan, act.admins, now).refusal;
    case "undo":
      return whyMayNotUndo(person, plan, act.admins, act.deciders);
  }
}

/**
 * Whom the person acts for when the rule allows `act` (undefined: as themselves, or not allowed):
 * what the decision row, the grant and the audit event record as `for`.
 */
export function actingFor(person: Person, plan: PlanFacts, act: Extract<Act, { verb: "decide" | "revoke" }>, now: Date): string | undefined {
  return (act.verb === "decide" ? judgeDecide(person, plan, act, now) : judgeRevoke(person, plan, act.admins, now)).for;
}

/** The rule's answer for one act: a refusal, or the delegator the person acts for (none: themselves). */
type Judged = { refusal: Refusal; for?: undefined } | { refusal?: undefined; for: string | undefined };

/** The delegators this person may act for on this plan: none where its policy forbids delegates. */
function delegatorsOf(person: Person, plan: PlanFacts): readonly Delegator[] {
  return plan.policy.delegation === false ? [] : (person.actsFor ?? []);
}

/**
 * The first way the person may act (themselves, then each delegator in turn), or the refusal that
 * explains best why none is open: the first that says more than "not one who may", else that one.
 */
function firstWay(ways: readonly { for: string | undefined; refusal: Refusal | undefined }[]): Judged {
  const open = ways.find((w) => w.refusal === undefined);
  if (open) return { for: open.for };
  const telling = ways.find((w) => w.refusal!.code !== "not_an_approver" && w.refusal!.code !== "not_a_revoker") ?? ways[0]!;
  return { refusal: telling.refusal! };
}

/**
 * Revoking is for an approved plan still waiting for an executor (a claimed one is being written
 * already; a final one has nothing left to stop), by someone who may decide it under its recorded
 * policy (an approver who is not the requester), a delegate acting for such an approver, or an
 * admin. Admin rights are not delegated: a delegation carries approvals only.
 */
function judgeRevoke(person: Person, plan: PlanFacts, admins: readonly string[], now: Date): Judged {
  if (plan.status !== "approved") return { refusal: { code: "not_revocable", status: plan.status } };
  if (names(admins, person)) return { for: undefined };
  const notARevoker: Refusal = { code: "not_a_revoker", approvers: plan.policy.approvers };
  if (plan.requesters.includes(person.userId)) return { refusal: notARevoker };
  const asThemselves = { for: undefined, refusal: isApprover(person, plan) ? undefined : notARevoker };
  const asDelegate = delegatorsOf(person, plan).map((d) => ({
    for: d.userId,
    refusal: plan.requesters.includes(d.userId)
      ? notARevoker
      : now >= d.endsAt
        ? ({ code: "delegation_ended", delegator: d.userId, endsAt: d.endsAt } as const)
        : isApprover(d, plan)
          ? undefined
          : notARevoker,
  }));
  return firstWay([asThemselves, ...asDelegate]);
}

/**
 * Asking for an undo is for those who may decide plans on the plan's targets (under its recorded
 * policy or the config now) and admins. Its requesters may ask too: they are the undo's requesters
 * then, and someone else approves it.
 */
function whyMayNotUndo(person: Person, plan: PlanFacts, admins: readonly string[], deciders: readonly string[]): Refusal | undefined {
  if (names(admins, person) || names(deciders, person) || isApprover(person, plan)) return undefined;
  return { code: "not_an_approver", approvers: [...new Set([...plan.policy.approvers, ...deciders])], requiredApprovals: plan.policy.requiredApprovals };
}

/**
 * Deciding: the plan's state first (expired, decided, another version), then who: a requester
 * never decides their own request, whatever the approver list says, nor anyone for them; the
 * person, or the delegator they act for, must be an approver; and toward the quorum each person
 * who clicked counts once and each person acted for counts once, so nobody counts twice.
 */
function judgeDecide(person: Person, plan: PlanFacts, act: Extract<Act, { verb: "decide" }>, now: Date): Judged {
  if (hasExpired(plan, now)) return { refusal: { code: "plan_expired", expiresAt: plan.expiresAt } };
  if (plan.status !== "pending") return { refusal: { code: "already_decided", status: plan.status } };
  if (act.hash !== undefined && act.hash !== plan.hash) return { refusal: { code: "hash_mismatch", expected: plan.hash, got: act.hash } };
  if (plan.requesters.includes(person.userId)) return { refusal: { code: "self_approval" } };
  const notAnApprover: Refusal = { code: "not_an_approver", approvers: plan.policy.approvers, requiredApprovals: plan.policy.requiredApprovals };
  const counted = new Set([...plan.approvals, ...(plan.actedFor ?? [])]);
  // Rejecting after approving is allowed (a change of mind ends the plan); approving twice counts once, so it is refused.
  const countedAlready = (who: string): Refusal | undefined =>
    act.verdict !== "reject" && counted.has(who)
      ? {
          code: "already_voted",
          approvals: plan.approvals,
          requiredApprovals: plan.policy.requiredApprovals,
          // Said when it is someone acted for that would count twice, not the clicker's own approval.
          ...(who !== person.userId || !plan.approvals.includes(who) ? { counted: who } : {}),
        }
      : undefined;
  const asThemselves = () => ({ for: undefined, refusal: isApprover(person, plan) ? countedAlready(person.userId) : notAnApprover });
  const asDelegate = (d: Delegator) => ({
    for: d.userId,
    refusal: plan.requesters.includes(d.userId)
      ? ({ code: "self_approval", for: d.userId } as const)
      : now >= d.endsAt
        ? ({ code: "delegation_ended", delegator: d.userId, endsAt: d.endsAt } as const)
        : !isApprover(d, plan)
          ? notAnApprover
          : (countedAlready(person.userId) ?? countedAlready(d.userId)),
  });
  const delegators = delegatorsOf(person, plan);
  if (act.for !== undefined) {
    const chosen = delegators.find((d) => d.userId === act.for);
    if (!chosen) return { refusal: notAnApprover };
    const judged = asDelegate(chosen);
    return judged.refusal ? { refusal: judged.refusal } : { for: judged.for };
  }
  return firstWay([asThemselves(), ...delegators.map(asDelegate)]);
}

/**
 * Admins read everything; approvers read the plans their policy names them for, whatever the
 * plan's state, and so do their delegates while the delegation lasts; beyond them,
 * `browser.readers` narrows who else may (absent: anyone signed in).
 */
function whyMayNotRead(person: Person, plan: PlanFacts, rights: ReadRights, now: Date): Refusal | undefined {
  if (names(rights.admins, person) || isApprover(person, plan)) return undefined;
  if (delegatorsOf(person, plan).some((d) => now < d.endsAt && isApprover(d, plan))) return undefined;
  if (rights.readers === undefined || names(rights.readers, person)) return undefined;
  return { code: "not_a_reader" };
}

/** Named by the plan's recorded policy, by id or through a user group. */
function isApprover(person: Pick<Person, "userId" | "memberOf">, plan: Pick<PlanFacts, "policy">): boolean {
  return names(plan.policy.approvers, person);
}
