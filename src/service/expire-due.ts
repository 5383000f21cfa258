import { and, asc, eq, lte } from "drizzle-orm";
import { plans } from "../store/schema.ts";
import type { ServiceContext } from "./context.ts";
import { transition } from "./transition.ts";

/**
 * Moves pending plans whose time ran out to `expired`. Rows another replica is expiring are
 * skipped (SKIP LOCKED), and the transition itself is conditional, so every expiry happens
 * once however many sweepers run. Returns the ids it expired.
 */
export async function expireDue(ctx: ServiceContext, batch = 100): Promise<string[]> {
  return ctx.database.db.transaction(async (tx) => {
    const now = ctx.clock();
    const due = await tx
      .select({ id: plans.id })
      .from(plans)
      .where(and(eq(plans.status, "pending"), lte(plans.expiresAt, now)))
      .orderBy(asc(plans.expiresAt))
      .limit(batch)
      .for("update", { skipLocked: true });
    const expired: string[] = [];
    for (const { id } of due) {
      const row = await transition(ctx, tx, { planId: id, transition: "expire", actor: { type: "system", process: "sweeper" } });
      if (row) expired.push(id);
    }
    if (expired.length > 0) ctx.logger.info({ planIds: expired }, "plans expired");
    return expired;
  });
}
