/** Reviewing alike plans together: opening a batch of them and deciding all of it, each plan by the one decision rule. What a door may call lives here; the files beside it are this capability's own. */
export { BATCH_TTL_MS, MAX_BATCH_PLANS } from "./batch-plans.ts";
export type { BatchPlan, BatchView } from "./batch-plans.ts";
export { decideBatch } from "./decide-batch.ts";
export type { BatchDecision, BatchPlanOutcome, BatchPlanResult, DecideBatchInput } from "./decide-batch.ts";
export { openBatch } from "./open-batch.ts";
export type { OpenBatchInput } from "./open-batch.ts";
export { batchFor } from "./read-batch.ts";
