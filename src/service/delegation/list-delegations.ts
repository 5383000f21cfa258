import { and, desc, eq, gt, isNull, or } from "drizzle-orm";
import { delegations } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { delegationView, type DelegationView } from "./delegation-view.ts";

/** How many an admin's list shows: the newest first. */
const LISTED = 500;

/**
 * Delegations in force now, newest first: every one (an admin's list; `ended` adds those that
 * ended or ran out), or a person's own, given or held (their App Home, their page).
 */
export async function listDelegations(
  ctx: Pick<ServiceContext, "database" | "clock">,
  input: { person?: string | undefined; ended?: boolean | undefined } = {},
): Promise<DelegationView[]> {
  const now = ctx.clock();
  const inForce = and(isNull(delegations.endedAt), gt(delegations.until, now));
  const whose = input.person === undefined ? undefined : or(eq(delegations.delegator, input.person), eq(delegations.delegate, input.person));
  const rows = await ctx.database.db
    .select()
    .from(delegations)
    .where(and(whose, input.ended ? undefined : inForce))
    .orderBy(desc(delegations.createdAt), desc(delegations.id))
    .limit(LISTED);
  return rows.map((row) => delegationView(row, now));
}
