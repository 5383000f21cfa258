import { and, asc, eq, gt, inArray, isNull } from "drizzle-orm";
import type { Queryable, Tx } from "../../store/db.ts";
import { delegations } from "../../store/schema.ts";

/** A delegation as stored (src/service/delegation/ makes and ends them). */
export type DelegationRow = typeof delegations.$inferSelect;

/** Whether a delegation reaches a plan: every target the plan touches is one it covers. */
export function coversTargets(row: Pick<DelegationRow, "targets">, targets: readonly string[]): boolean {
  const covered = row.targets;
  return covered === null || targets.every((t) => covered.includes(t));
}

/** When it stops: its last day's end, or the moment it was ended early. */
export function endsAtOf(row: Pick<DelegationRow, "until" | "endedAt">): Date {
  return row.endedAt && row.endedAt < row.until ? row.endedAt : row.until;
}

/**
 * The delegations a person holds at `at`, over any targets, oldest first (an index range on the
 * delegate's open delegations). Only delegations made to them count: what their own delegators
 * were given by others is not passed on.
 */
export async function heldBy(db: Queryable, input: { delegate: string; at: Date }): Promise<DelegationRow[]> {
  return db
    .select()
    .from(delegations)
    .where(and(eq(delegations.delegate, input.delegate), isNull(delegations.endedAt), gt(delegations.until, input.at)))
    .orderBy(asc(delegations.createdAt), asc(delegations.id));
}

/**
 * The delegators who named someone else for these targets at `at`, by delegator: whom reminders
 * reach in their place.
 */
export async function delegatesOf(
  db: Queryable,
  input: { delegators: readonly string[]; targets: readonly string[]; at: Date },
): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  if (input.delegators.length === 0) return found;
  const rows = await db
    .select()
    .from(delegations)
    .where(and(inArray(delegations.delegator, [...input.delegators]), isNull(delegations.endedAt), gt(delegations.until, input.at)))
    .orderBy(asc(delegations.createdAt), asc(delegations.id));
  for (const row of rows) {
    if (!coversTargets(row, input.targets)) continue;
    const named = found.get(row.delegator) ?? [];
    if (!named.includes(row.delegate)) named.push(row.delegate);
    found.set(row.delegator, named);
  }
  return found;
}

/**
 * These delegations as they are now, read under a share lock inside a decision's transaction: a
 * delegation cannot be ended while a click through it is being recorded, so it ended either
 * before the click committed (and the click sees it) or after.
 */
export async function delegationsHeld(tx: Tx, ids: readonly string[]): Promise<DelegationRow[]> {
  if (ids.length === 0) return [];
  return tx
    .select()
    .from(delegations)
    .where(inArray(delegations.id, [...ids]))
    .orderBy(asc(delegations.id))
    .for("share");
}
