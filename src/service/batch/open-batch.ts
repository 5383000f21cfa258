import { randomUUID } from "node:crypto";
import { eq, lt } from "drizzle-orm";
import { likenessOf } from "../../plan/alike.ts";
import { isPlanId, type PlanDocument } from "../../plan/schema.ts";
import { batches, plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { alikeWaitingFor } from "./alike-waiting.ts";
import { BATCH_TTL_MS, MAX_BATCH_PLANS, type BatchView } from "./batch-plans.ts";
import { viewOfBatch } from "./read-batch.ts";

/** Who opens a batch, from where, alike to which plan, and how many plans it may hold (at most MAX_BATCH_PLANS). */
export interface OpenBatchInput {
  reviewer: { userId: string; via: "slack" | "web" };
  /** A plan of the likeness to review together: the batch holds the plans alike to it. */
  like: string;
  /** How many plans the door can show: Slack's modal fewer than the browser's page. */
  shown?: number | undefined;
}

/** Batch records are kept a day past their expiry, then removed when the next batch is opened. */
const KEPT_AFTER_EXPIRY_MS = 24 * 60 * 60_000;

/**
 * Opens a batch: the oldest pending plans alike to `like` that this reviewer may decide now (at
 * most `shown`), recorded with the exact hash of each as it is shown, for ten minutes. The
 * server decides what is alike (src/plan/alike.ts), from the stored documents. A plan whose
 * policy keeps it out of batches is never in one.
 */
export async function openBatch(ctx: ServiceContext, input: OpenBatchInput): Promise<BatchView> {
  const shown = Math.max(1, Math.min(input.shown ?? MAX_BATCH_PLANS, MAX_BATCH_PLANS));
  const [like] = isPlanId(input.like)
    ? await ctx.database.db.select({ agentId: plans.agentId, document: plans.document }).from(plans).where(eq(plans.id, input.like))
    : [];
  if (!like) throw new ServiceError("not_found", `there is no plan ${input.like}`);
  const document = like.document as PlanDocument;
  const likeness = likenessOf(document);
  if (!likeness)
    throw new ServiceError(
      "invalid_request",
      "plans of this plan's targets are reviewed one by one (their policy sets `batch: false`); open the plan to decide it",
    );
  const waiting = await alikeWaitingFor(ctx, { userId: input.reviewer.userId, agentId: like.agentId, likeness });
  if (waiting.length === 0) throw new ServiceError("not_found", "no plans alike to this one wait for your decision now");
  const pairs = waiting.slice(0, shown).map((p) => ({ planId: p.id, hash: p.hash }));
  const now = ctx.clock();
  const record = {
    id: randomUUID(),
    reviewer: input.reviewer.userId,
    via: input.reviewer.via,
    likeness: likeness.key,
    plans: pairs,
    more: waiting.length - pairs.length,
    createdAt: now,
    expiresAt: new Date(now.getTime() + BATCH_TTL_MS),
  };
  await ctx.database.db.delete(batches).where(lt(batches.expiresAt, new Date(now.getTime() - KEPT_AFTER_EXPIRY_MS)));
  await ctx.database.db.insert(batches).values(record);
  ctx.logger.info({ batchId: record.id, reviewer: record.reviewer, plans: pairs.length, more: record.more }, "batch of alike plans opened");
  return viewOfBatch(ctx, record);
}
