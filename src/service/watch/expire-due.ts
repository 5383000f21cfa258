import { and, asc, lte } from "drizzle-orm";
import type { Transition } from "../../plan/lifecycle.ts";
import { plans } from "../../store/schema.ts";
import type { Tx } from "../../store/db.ts";
import type { ServiceContext } from "../context.ts";
import { transition } from "../lifecycle/transition.ts";
import { statusIs } from "../../store/plan-status-sql.ts";

/**
 * Ends plans whose time ran out: pending plans nobody decided before `expiresAt`, and
 * approved plans no executor claimed before their grant expired. Rows another replica is
 * expiring are skipped (SKIP LOCKED) and each transition is conditional, so every expiry
 * happens once however many sweepers run. `batch` bounds each kind per call (a transaction's
 * worth of row locks). Returns the ids it expired.
 */
export async function expireDue(ctx: ServiceContext, { batch = 100 }: { batch?: number } = {}): Promise<string[]> {
  return ctx.database.db.transaction(async (tx) => {
    const now = ctx.clock();
    const undecided = await due(tx, "pending", plans.expiresAt, now, batch);
    const unclaimed = await due(tx, "approved", plans.grantExpiresAt, now, batch);
    const expired = [
      ...(await expireEach(ctx, tx, undecided, "expire", "no decision before the plan expired")),
      ...(await expireEach(ctx, tx, unclaimed, "expireGrant", "no executor claimed the plan before its grant expired")),
    ];
    if (expired.length > 0) ctx.logger.info({ planIds: expired }, "plans expired");
    return expired;
  });
}

async function due(
  tx: Tx,
  status: "pending" | "approved",
  deadline: typeof plans.expiresAt | typeof plans.grantExpiresAt,
  now: Date,
  batch: number,
): Promise<string[]> {
  const rows = await tx
    .select({ id: plans.id })
    .from(plans)
    .where(and(statusIs(status), lte(deadline, now)))
    .orderBy(asc(deadline))
    .limit(batch)
    .for("update", { skipLocked: true });
  return rows.map((r) => r.id);
}

async function expireEach(ctx: ServiceContext, tx: Tx, ids: string[], name: Transition, reason: string): Promise<string[]> {
  const expired: string[] = [];
  for (const id of ids) {
    const row = await transition(ctx, tx, { planId: id, transition: name, actor: { type: "system", process: "sweeper" }, data: { reason } });
    if (row) expired.push(id);
  }
  return expired;
}
