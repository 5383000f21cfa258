import { eq } from "drizzle-orm";
import type { Transition } from "../../plan/lifecycle.ts";
import { Outcome } from "../../plan/outcome.ts";
import { redactText } from "../../policy/redact.ts";
import { plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { leaseLost } from "./heartbeat-claim.ts";
import { executorSeen } from "./executor-presence.ts";
import { transition } from "../lifecycle/transition.ts";
import { markUndoneIn } from "../undo/mark-undone.ts";
import { validate } from "../validate.ts";

const BY_STATUS: Record<Outcome["status"], Transition> = {
  applied: "apply",
  stale: "stale",
  failed: "fail",
  expired: "expireUnapplied",
};

export interface ReportOutcomeInput {
  claimToken: string;
  /** The outcome as received: validated here. */
  outcome: unknown;
  /** The executor's id (EXECUTOR_ID_HEADER), if it sent one. */
  executor?: string | undefined;
}

/**
 * The executor holding `claimToken` closes its claim with the outcome. Only the current token
 * counts: an executor that stalled past its lease and was taken over is refused (`lease_lost`),
 * so an outcome can be reported once. The token is unique, so the transition finds the plan by
 * it directly.
 */
export async function reportOutcome(ctx: ServiceContext, input: ReportOutcomeInput): Promise<{ status: Outcome["status"] }> {
  const { claimToken } = input;
  await executorSeen(ctx, input.executor);
  const outcome = validate(Outcome, input.outcome, "outcome");
  const actor = { type: "system", process: "executor" } as const;
  const row = await ctx.database.db.transaction(async (tx) => {
    const reported = await transition(ctx, tx, {
      transition: BY_STATUS[outcome.status],
      actor,
      data: {
        ...(outcome.reconciled ? { reconciled: true } : {}),
        ...(outcome.partial ? { partial: true } : {}),
        ...(outcome.reason ? { reason: redactText(outcome.reason) } : {}),
        // Whether each write verified goes into the audit trail too: a write that did not land as
        // approved must stay on record after the outcome itself is purged.
        actions: outcome.actions.map((a) => ({ index: a.index, status: a.status, ...(a.verified !== undefined ? { verified: a.verified } : {}) })),
      },
      set: { outcome, claimToken: null, leaseExpiresAt: null },
      guard: eq(plans.claimToken, claimToken),
    });
    // An applied undo marks the plan it took back, in the same transaction.
    if (reported) await markUndoneIn(ctx, tx, reported, actor);
    return reported;
  });
  if (!row) throw leaseLost();
  ctx.logger.info({ planId: row.id, status: outcome.status, reconciled: outcome.reconciled, partial: outcome.partial }, "outcome reported");
  return { status: outcome.status };
}
