import { sleepUnlessAborted } from "../abortable-sleep.ts";
import { decide, type DecideInput, type DecideResult } from "../service/decide/index.ts";
import type { ServiceContext } from "../service/context.ts";
import { isServiceError } from "../service/errors.ts";
import { isDatabaseUnreachable } from "../store/database-errors.ts";
import { sql } from "../store/db.ts";

export const DEFAULT_DECISION_RETRY_MS = 120_000;

export interface DurableDecisionOptions {
  /** How long a click may wait for the database to come back before the person is told it was not recorded. */
  windowMs?: number | undefined;
  /** Tells the person who clicked, privately. */
  tell: (text: string) => Promise<void>;
  /** The server is stopping: stop waiting for the database now, and tell the person as if the window had passed. */
  signal?: AbortSignal | undefined;
}

/**
 * Slack has already been answered when a click is decided, so a database outage must not lose
 * it silently: the whole `decide` is run again until it lands, so the refusals that hold when it
 * lands (expired, already decided) still apply; or, once the window has passed, the person is
 * told that nothing was recorded. Refusals are thrown as usual, for the door to explain.
 */
export async function decideDurably(ctx: ServiceContext, input: DecideInput, options: DurableDecisionOptions): Promise<DecideResult | undefined> {
  const deadline = Date.now() + (options.windowMs ?? DEFAULT_DECISION_RETRY_MS);
  let delay = 250;
  let waited = false;
  for (;;) {
    try {
      return await decide(ctx, input);
    } catch (err) {
      // The click may have committed just before the connection dropped (its COMMIT sent, the
      // answer lost): then this person's own vote is what we find, or, when it completed the
      // quorum or rejected, the decision it made. Neither is a refusal to tell them about.
      if (waited && (isServiceError(err, "already_voted") || isServiceError(err, "already_decided")) && (await decidedBy(ctx, input))) return undefined;
      if (!isDatabaseUnreachable(err)) throw err;
      if (!waited) ctx.logger.warn({ planId: input.planId, userId: input.actor.userId }, "database unreachable: holding a Slack decision until it returns");
      waited = true;
      const left = deadline - Date.now();
      if (left <= 0 || options.signal?.aborted) {
        ctx.logger.warn(
          { planId: input.planId, userId: input.actor.userId, stopping: options.signal?.aborted ?? false },
          "a Slack decision was not recorded: the database stayed unreachable",
        );
        await options.tell(notRecordedText(ctx, input));
        return undefined;
      }
      await sleepUnlessAborted(Math.min(delay, left), options.signal);
      delay = Math.min(delay * 2, 2000);
    }
  }
}

/** Whether this person's decision (this verdict) on the plan is recorded; false when that cannot be read either. */
async function decidedBy(ctx: ServiceContext, input: DecideInput): Promise<boolean> {
  const found = await ctx.database
    .rows<{ one: number }>(
      sql`SELECT 1 AS one FROM decisions WHERE plan_id = ${input.planId}::uuid AND user_id = ${input.actor.userId} AND verdict = ${input.verdict} LIMIT 1`,
    )
    .catch(() => []);
  return found.length > 0;
}

function notRecordedText(ctx: ServiceContext, input: DecideInput): string {
  const what = input.verdict === "approve" ? "approval" : "rejection";
  return `Your ${what} of <${ctx.config.publicUrl}/plans/${input.planId}|plan ${input.planId}> was not recorded because Countersign's database was unavailable; click again.`;
}
