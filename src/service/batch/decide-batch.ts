import type { ErrorCode } from "../../contract/error-codes.ts";
import { isDatabaseUnreachable } from "../../store/database-errors.ts";
import type { ServiceContext } from "../context.ts";
import { decide, type DecideInput } from "../decide/index.ts";
import { ServiceError } from "../errors.ts";
import { countIfRefusal } from "../operations/metrics.ts";
import { batchPlansOf } from "./batch-plans.ts";
import { batchRecordOf } from "./read-batch.ts";

/** Approve-all or Reject-all on a batch: who clicks, through which door, and one reason for all when rejecting. */
export interface DecideBatchInput {
  batchId: string;
  actor: { userId: string; via: "slack" | "web" };
  verdict: "approve" | "reject";
  reason?: string | undefined;
}

/** What became of one plan of the batch. */
export type BatchPlanResult =
  | { kind: "approved" }
  /** Recorded; the plan still needs more approvals. */
  | { kind: "counted"; approvals: number; requiredApprovals: number }
  | { kind: "rejected" }
  /** Refused by the one decision rule (or the re-check at Approve): nothing recorded for this plan. */
  | { kind: "refused"; code: ErrorCode; message: string; status?: string | undefined }
  /** Not decided because of a fault (the database went away): nothing recorded for this plan, as far as is known. */
  | { kind: "failed"; message: string };

export interface BatchPlanOutcome {
  planId: string;
  hash: string;
  title: string;
  reviewUrl: string;
  result: BatchPlanResult;
  /** An approval recorded although its targets could not be re-read at the click: why. */
  recheckFailed?: string | undefined;
}

export interface BatchDecision {
  batchId: string;
  verdict: "approve" | "reject";
  outcomes: BatchPlanOutcome[];
}

/**
 * Decides every plan of a batch the same way, each on its own: `decide()` per plan, against the
 * hash the batch recorded for it, so the one decision rule answers each in its fixed refusal
 * order (expired, decided, changed version, requester, approver, voted, target changed) and one
 * plan's refusal leaves the others to be decided. Each decision is its own audit event, carrying
 * the batch id. Only the reviewer who opened the batch may decide through it, within ten minutes.
 */
export async function decideBatch(ctx: ServiceContext, input: DecideBatchInput): Promise<BatchDecision> {
  const record = await batchRecordOf(ctx, { batchId: input.batchId, userId: input.actor.userId });
  const reason = input.reason?.trim();
  if (input.verdict === "reject" && !reason) {
    throw new ServiceError("invalid_request", "rejecting a batch needs one reason, given to every plan's agent and requester", {
      issues: [{ path: "/reason", message: "required to reject" }],
    });
  }
  const shown = await batchPlansOf(ctx, record.plans);
  const outcomes: BatchPlanOutcome[] = [];
  // One at a time: each decision re-reads its targets and takes its plan's row lock on its own,
  // as a click on that plan would, and the answer lists the plans in the batch's order.
  for (const plan of shown) {
    const decision: DecideInput = {
      planId: plan.planId,
      hash: plan.hash,
      actor: input.actor,
      verdict: input.verdict,
      reason,
      batchId: record.id,
    };
    const about = { planId: plan.planId, hash: plan.hash, title: plan.title, reviewUrl: plan.reviewUrl };
    try {
      const decided = await decide(ctx, decision);
      const result: BatchPlanResult =
        decided.status === "rejected"
          ? { kind: "rejected" }
          : decided.status === "pending"
            ? { kind: "counted", approvals: decided.approvals.length, requiredApprovals: decided.requiredApprovals }
            : { kind: "approved" };
      outcomes.push({ ...about, result, ...(decided.recheckFailed ? { recheckFailed: decided.recheckFailed } : {}) });
    } catch (err) {
      if (err instanceof ServiceError) {
        // Counted as a click on that plan would be: refusals record nothing else.
        await countIfRefusal(ctx, err);
        const status = typeof err.details?.status === "string" ? err.details.status : undefined;
        outcomes.push({ ...about, result: { kind: "refused", code: err.code, message: err.message, ...(status ? { status } : {}) } });
        continue;
      }
      ctx.logger.error({ err, batchId: record.id, planId: plan.planId }, "a plan of a batch could not be decided");
      const message = isDatabaseUnreachable(err)
        ? "Countersign's database was unreachable; this plan was not decided. Open it and decide it again."
        : "an internal error stopped this plan's decision; nothing was recorded for it. Open it and decide it again.";
      outcomes.push({ ...about, result: { kind: "failed", message } });
    }
  }
  const count = (kind: BatchPlanResult["kind"]) => outcomes.filter((o) => o.result.kind === kind).length;
  ctx.logger.info(
    {
      batchId: record.id,
      userId: input.actor.userId,
      via: input.actor.via,
      verdict: input.verdict,
      approved: count("approved"),
      counted: count("counted"),
      rejected: count("rejected"),
      refused: count("refused"),
      failed: count("failed"),
    },
    "batch decided",
  );
  return { batchId: record.id, verdict: input.verdict, outcomes };
}
