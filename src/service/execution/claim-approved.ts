import { randomBytes } from "node:crypto";
import { and, asc, eq, gt, inArray, lte, notExists, or, sql } from "drizzle-orm";
import type { Claim } from "../../contract/executor-api.ts";
import type { ActionPreview } from "../../contract/agent-api.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import { pause, plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import type { Tx } from "../../store/db.ts";
import { recordPlanEvent, transitionLocked, type PlanRow } from "../lifecycle/transition.ts";
import { statusIs } from "../../store/plan-status-sql.ts";
import { executorPolling, grantHeadersOf } from "./executors-seen.ts";
import { executorSeen } from "./executor-presence.ts";

/** Re-check for claimable plans this often even without a signal: leases run out silently (nothing announces them). */
const RECHECK_MS = 1000;

/**
 * Hands one plan to an executor: an approved plan whose grant is still valid, or an executing
 * plan whose lease ran out (its executor died or stalled; the new one may only reconcile if the
 * grant has expired meanwhile). Rows another executor is claiming are skipped, so no two get
 * the same plan. Every claim gets a fresh token; only the holder of the current token may
 * heartbeat or report (fencing). An executor that names its key ids (`kids`) is handed only plans
 * whose grant one of them signed: the others stay approved for an executor that can verify them.
 *
 * The claim is one statement (find, lock and lease the row) plus its event, in one transaction:
 * an executor that finds nothing costs BEGIN, UPDATE, COMMIT. The event is a statement of its own
 * after the UPDATE (its chain's tail is read after the row lock is held, audit.ts); a failed event
 * rolls the claim back.
 */
export async function claimApproved(ctx: ServiceContext, input: { kids?: readonly string[] | undefined } = {}): Promise<Claim | undefined> {
  const headers = grantHeadersOf(input.kids);
  return ctx.database.db.transaction(async (tx) => {
    const now = ctx.clock();
    const claimToken = randomBytes(24).toString("base64url");
    const leaseExpiresAt = new Date(now.getTime() + ctx.config.executor.leaseSeconds * 1000);
    const candidate = tx
      .select({ id: plans.id, was: plans.status })
      .from(plans)
      .where(
        and(
          or(and(statusIs("approved"), gt(plans.grantExpiresAt, now)), and(statusIs("executing"), lte(plans.leaseExpiresAt, now))),
          // Which key signed a grant is in its first segment, the same string for every grant one
          // key signs (grantHeaderSegment): matched as stored, so no stored grant can fail the read.
          headers ? inArray(sql`split_part(${plans.grant}, '.', 1)`, headers) : undefined,
          // The kill switch: read here, in the claim's own statement, so a pause holds
          // on every replica the moment it commits, whether or not the replica has heard of it.
          notExists(tx.select({ one: sql`1` }).from(pause)),
        ),
      )
      .orderBy(asc(plans.updatedAt))
      .limit(1)
      .for("update", { skipLocked: true })
      .as("candidate");
    const [row] = await tx
      .update(plans)
      .set({ status: "executing", claimToken, leaseExpiresAt, updatedAt: now, claims: sql`${plans.claims} + 1` })
      .from(candidate)
      .where(eq(plans.id, candidate.id))
      .returning({
        id: plans.id,
        status: plans.status,
        hash: plans.hash,
        callbackUrl: plans.callbackUrl,
        document: plans.document,
        preview: plans.preview,
        grant: plans.grant,
        claims: plans.claims,
        was: candidate.was,
      });
    if (!row) return undefined;
    const takeover = row.was === "executing";
    await recordPlanEvent(ctx, tx, row, takeover ? "plan.reclaimed" : "plan.executing", { type: "system", process: "executor" }, now, {
      claim: row.claims,
      leaseExpiresAt: leaseExpiresAt.toISOString(),
    });
    return {
      plan: row.document as PlanDocument,
      preview: row.preview as { actions: ActionPreview[] },
      grant: row.grant!,
      claimToken,
      leaseExpiresAt: leaseExpiresAt.toISOString(),
    };
  });
}
/**
 * Long-poll: claims at once if it can, else waits for an approval (or a lease to run out). While
 * it waits, `executor` counts as connected (executor-presence.ts). The
 * wait is elapsed time on the monotonic timer; whether a grant or lease is still valid is judged
 * by ctx.clock inside claimApproved.
 */
export async function claimApprovedWaiting(
  ctx: ServiceContext,
  input: { waitMs: number; signal?: AbortSignal | undefined; kids?: readonly string[] | undefined; executor?: string | undefined },
): Promise<Claim | undefined> {
  const { waitMs, signal, kids, executor } = input;
  const deadline = performance.now() + waitMs;
  const done = executorPolling(ctx, kids);
  try {
    for (;;) {
      // Every turn of the wait, so an executor waiting here stays connected for every replica;
      // written beside the claim rather than before it, and a claim is never lost to it: a
      // failed write is tried again on the next turn (executor-presence.ts).
      const seen = executorSeen(ctx, executor).catch((err: unknown) => ctx.logger.warn({ err, executor }, "could not record the executor as seen"));
      const claim = await claimApproved(ctx, { kids });
      await seen;
      const left = deadline - performance.now();
      if (claim || left <= 0 || signal?.aborted) {
        if (claim && signal?.aborted)
          ctx.logger.warn({ planId: claim.plan.id }, "executor went away while claiming; the lease will run out and another executor takes over");
        return claim;
      }
      // Woken by an approval, or at the re-check; one heard since the read that woke nobody ends
      // the wait at once (plan-signals.ts). An approval on this replica may claim its plan for
      // this executor and answer the wait with the claim (claimLocked).
      const handed = await ctx.signals.waitClaimable(Math.min(left, RECHECK_MS), signal, kids);
      if (handed) return handed;
    }
  } finally {
    done();
  }
}

/**
 * The claim an approval makes for an executor waiting on this replica (PlanSignals.takeClaimer),
 * in the approval's transaction, under the plan's row lock: what claimApproved writes for an
 * approved plan (a fresh token and lease, the `plan.executing` event), without the executor's own
 * claim transaction and the wake-up before it on the click's path, the bench line
 * approve_to_patch_p50_vs_process_floor. The caller has read the pause under the same lock: a
 * paused Countersign claims nothing.
 */
export async function claimLocked(
  ctx: ServiceContext,
  tx: Tx,
  plan: Pick<PlanRow, "id" | "hash" | "callbackUrl" | "document" | "preview" | "claims">,
  grant: string,
): Promise<Claim> {
  const now = ctx.clock();
  const claimToken = randomBytes(24).toString("base64url");
  const leaseExpiresAt = new Date(now.getTime() + ctx.config.executor.leaseSeconds * 1000);
  const claims = plan.claims + 1;
  await transitionLocked(ctx, tx, plan, {
    transition: "claim",
    actor: { type: "system", process: "executor" },
    data: { claim: claims, leaseExpiresAt: leaseExpiresAt.toISOString() },
    set: { claimToken, leaseExpiresAt, claims },
  });
  return {
    plan: plan.document as PlanDocument,
    preview: plan.preview as { actions: ActionPreview[] },
    grant,
    claimToken,
    leaseExpiresAt: leaseExpiresAt.toISOString(),
  };
}
