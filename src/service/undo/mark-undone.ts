import { and, eq, isNull } from "drizzle-orm";
import type { Actor } from "../../contract/agent-api.ts";
import { plans } from "../../store/schema.ts";
import type { Tx } from "../../store/db.ts";
import type { ServiceContext } from "../context.ts";
import { recordPlanEvent, type PlanRow } from "../lifecycle/transition.ts";

/** The audit (and Slack) event of a plan whose undo was applied: not a status change, so no webhook. */
export const UNDO_APPLIED_EVENT = "undo.applied";

/**
 * In the transaction that records an undo as applied: the plan it takes back gains `undone_by`
 * (once: the guard keeps it fixed) and an event in its own thread. Nothing when the plan is gone
 * (purged) or was taken back already.
 */
export async function markUndoneIn(ctx: Pick<ServiceContext, "clock" | "sinks" | "config">, tx: Tx, undo: PlanRow, actor: Actor): Promise<void> {
  if (!undo.undoes || undo.status !== "applied") return;
  const at = ctx.clock();
  const [original] = await tx
    .update(plans)
    .set({ undoneBy: undo.id, updatedAt: at })
    .where(and(eq(plans.id, undo.undoes), isNull(plans.undoneBy)))
    .returning();
  if (original) await recordPlanEvent(ctx, tx, original, UNDO_APPLIED_EVENT, actor, at, { undo: undo.id, hash: undo.hash });
}
