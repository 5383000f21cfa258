import { eq } from "drizzle-orm";
import { likenessOf, likenessSummary } from "../../plan/alike.ts";
import { neutralizeBidi } from "../../plan/bidi.ts";
import { isPlanId, type PlanDocument } from "../../plan/schema.ts";
import { batches, plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { batchPlansOf, type BatchView } from "./batch-plans.ts";

export type BatchRecord = typeof batches.$inferSelect;

/**
 * The batch this reviewer opened, as recorded. Someone else's batch is no batch to them
 * (`not_found`, as for an id that never was); past its ten minutes it is `batch_expired`.
 */
export async function batchRecordOf(ctx: Pick<ServiceContext, "database" | "clock">, input: { batchId: string; userId: string }): Promise<BatchRecord> {
  const [record] = isPlanId(input.batchId) ? await ctx.database.db.select().from(batches).where(eq(batches.id, input.batchId)) : [];
  if (!record || record.reviewer !== input.userId) throw new ServiceError("not_found", `there is no batch ${input.batchId.slice(0, 80)} of yours`);
  if (ctx.clock() >= record.expiresAt)
    throw new ServiceError(
      "batch_expired",
      `this batch expired at ${record.expiresAt.toISOString()}, ten minutes after it was opened; nothing was decided through it. Open the alike plans again to review them as they are now.`,
      { details: { expiresAt: record.expiresAt.toISOString() } },
    );
  return record;
}

/** A batch as its reviewer sees it: the plans it binds to, as they are now, each at the version recorded. */
export async function batchFor(ctx: ServiceContext, input: { batchId: string; userId: string }): Promise<BatchView> {
  return viewOfBatch(ctx, await batchRecordOf(ctx, input));
}

/** The view of a recorded batch; what its plans share is read from its first plan's document. */
export async function viewOfBatch(ctx: ServiceContext, record: BatchRecord): Promise<BatchView> {
  const first = record.plans[0];
  const [row] = first ? await ctx.database.db.select({ document: plans.document }).from(plans).where(eq(plans.id, first.planId)) : [];
  const likeness = row ? likenessOf(row.document as PlanDocument) : undefined;
  return {
    id: record.id,
    reviewer: record.reviewer,
    via: record.via === "slack" ? "slack" : "web",
    alike: likeness ? likenessSummary(likeness) : "",
    agent: likeness ? neutralizeBidi(likeness.agent) : "",
    createdAt: record.createdAt.toISOString(),
    expiresAt: record.expiresAt.toISOString(),
    more: record.more,
    plans: await batchPlansOf(ctx, record.plans),
    url: `${ctx.config.publicUrl}/batches/${record.id}`,
  };
}
