import { approverGroups, type Delegator, type Person } from "../../policy/approvers.ts";
import type { AppliedPolicy } from "../../plan/schema.ts";
import type { Tx } from "../../store/db.ts";
import { membershipOf, type Membership } from "./approver-groups.ts";
import type { ServiceContext } from "../context.ts";
import { coversTargets, delegationsHeld, endsAtOf, heldBy, type DelegationRow } from "./delegations-held.ts";

/**
 * Someone about to act on a plan, as the one rule needs them: their user groups among those the
 * question names, and the people who delegated to them for the plan's targets, each with their
 * own groups (a delegate acts with the delegator's rights). `unchecked`: groups Slack could not
 * answer for, the person's or a delegator's. `delegations`: what was found, to read again under
 * the plan's row lock (personUnderLock).
 */
export interface ActingPerson {
  person: Person;
  unchecked: Membership["unchecked"];
  delegations: readonly DelegationRow[];
}

/** What acting on a plan depends on: its approvers, whether it allows delegates, and the targets it touches. */
export interface ActingOn {
  policy: Pick<AppliedPolicy, "approvers" | "delegation">;
  targets: readonly string[];
}

/**
 * The delegations a person holds now, over any targets, with each delegator's user groups among
 * `groups`: what lists of many plans ask once (personOn picks those reaching one plan).
 */
export interface HeldDelegations {
  rows: readonly DelegationRow[];
  memberOf: ReadonlyMap<string, readonly string[]>;
  unchecked: Membership["unchecked"];
}

/**
 * Looks the person up for acting on a plan, before any transaction (Slack is asked about
 * groups; no lock is held): `groups` are the user groups to check the person against (the
 * plan's approver groups, and the admins' for a revoke). The edit and undo verbs ask the same.
 */
export async function personActing(
  ctx: Pick<ServiceContext, "database" | "directory" | "clock">,
  input: { userId: string; groups: readonly string[]; on: ActingOn },
): Promise<ActingPerson> {
  const { policy } = input.on;
  const own = policy.approvers.includes(input.userId) && input.groups.every((g) => policy.approvers.includes(g)) ? [] : input.groups;
  const membership = await membershipOf(ctx, input.userId, own);
  const held = policy.delegation === false ? undefined : await delegationsHeldBy(ctx, input.userId, approverGroups(policy), input.on.targets);
  const person = personOn({ userId: input.userId, memberOf: membership.memberOf }, held, input.on);
  return {
    person,
    unchecked: [...membership.unchecked, ...(held?.unchecked ?? [])],
    delegations: held?.rows.filter((row) => coversTargets(row, input.on.targets)) ?? [],
  };
}

/**
 * The delegations a person holds now (only those reaching `targets`, when given), and each
 * delegator's membership of `groups` (asked of Slack only for delegators who need it).
 */
export async function delegationsHeldBy(
  ctx: Pick<ServiceContext, "database" | "directory" | "clock">,
  userId: string,
  groups: readonly string[],
  targets?: readonly string[],
): Promise<HeldDelegations> {
  const rows = (await heldBy(ctx.database.db, { delegate: userId, at: ctx.clock() })).filter((row) => !targets || coversTargets(row, targets));
  const memberOf = new Map<string, readonly string[]>();
  const unchecked: Membership["unchecked"] = [];
  for (const delegator of new Set(rows.map((r) => r.delegator))) {
    const theirs = await membershipOf(ctx, delegator, groups);
    unchecked.push(...theirs.unchecked);
    memberOf.set(delegator, theirs.memberOf);
  }
  return { rows, memberOf, unchecked };
}

/** The person as the rule sees them on one plan: acting for each delegator whose delegation reaches it, unless its policy forbids delegates. */
export function personOn(base: Pick<Person, "userId" | "memberOf">, held: HeldDelegations | undefined, on: ActingOn): Person {
  if (!held || on.policy.delegation === false) return base;
  const reaching = held.rows.filter((row) => coversTargets(row, on.targets));
  const actsFor: Delegator[] = [...endsByDelegator(reaching)].map(([delegator, endsAt]) => ({
    userId: delegator,
    memberOf: held.memberOf.get(delegator) ?? [],
    endsAt,
  }));
  return actsFor.length > 0 ? { ...base, actsFor } : base;
}

/**
 * The person again inside the plan's transaction, their delegations read anew under a share
 * lock: one ended since the lookup (early, or its day over) now says when, so the rule refuses
 * a click through it as delegation_ended.
 */
export async function personUnderLock(tx: Tx, acting: ActingPerson): Promise<Person> {
  const { person } = acting;
  if (!person.actsFor || acting.delegations.length === 0) return person;
  const now = endsByDelegator(
    await delegationsHeld(
      tx,
      acting.delegations.map((d) => d.id),
    ),
  );
  return {
    ...person,
    actsFor: person.actsFor.map((d) => ({ ...d, endsAt: now.get(d.userId) ?? new Date(0) })),
  };
}

/** Each delegator once, in the order found, ending with the last of their delegations. */
function endsByDelegator(rows: readonly DelegationRow[]): Map<string, Date> {
  const ends = new Map<string, Date>();
  for (const row of rows) {
    const end = endsAtOf(row);
    const known = ends.get(row.delegator);
    if (!known || end > known) ends.set(row.delegator, end);
  }
  return ends;
}
