import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { Actor } from "../../contract/agent-api.ts";
import { outbox, plans } from "../../store/schema.ts";
import { statusIs } from "../../store/plan-status-sql.ts";
import type { ServiceContext } from "../context.ts";
import { planEventStatement } from "../lifecycle/transition.ts";
import { pauseNow, reviewChannels } from "../operations/pause.ts";
import { appendAudit } from "../records/audit.ts";
import { NOTICE_SINK, noticeLaneOf } from "../records/outbox-lanes.ts";
import { executorPresence, missingAfterMs, NONE_SEEN, pruneExecutorPresence, type Presence } from "./executor-presence.ts";
import { claimsWaitingHere } from "./executors-seen.ts";

/** The plan event whose thread reply says no executor is connected: once per plan. Not a status change, so no webhook. */
export const NO_EXECUTOR_EVENT = "plan.no_executor";
/** The audit event of an announced outage (no plan), with the review channels' notices. */
export const EXECUTORS_MISSING_EVENT = "executors.missing";

/** What a review channel is told when no executor is connected (the "slack_notice" sink). */
export interface ExecutorsMissingNotice {
  type: typeof EXECUTORS_MISSING_EVENT;
  channel: string;
  /** When an executor was last seen; null when none has been. */
  lastSeenAt: string | null;
  missingAfterSeconds: number;
  at: string;
}

const ACTOR: Actor = { type: "system", process: "executor-watch" };
/** Plans told per run at most; the rest on the next. */
const PLANS_PER_RUN = 100;

/** One replica's watch for missing executors (announceMissingExecutors), from when it starts. */
export function watchExecutors(ctx: ServiceContext): () => Promise<unknown> {
  const watchingSince = ctx.clock().getTime();
  return async () => {
    await pruneExecutorPresence(ctx);
    return announceMissingExecutors(ctx, { watchingSince });
  };
}

/**
 * While no executor is connected: the review channels are told once per outage, and each
 * approved plan's thread once (a `plan.no_executor` event). Whichever replica gets there first
 * tells: the outage's mark is one conditional UPDATE of executor_presence, a plan's event is
 * written under its row lock after checking it has none. A replica that started less than
 * `missingAfterSeconds` ago tells nothing yet (executors reconnect after a restart), nor does
 * one while Countersign is paused (the pause is why plans wait) or with `executor.expected: false`.
 */
export async function announceMissingExecutors(ctx: ServiceContext, input: { watchingSince: number }): Promise<{ outage: boolean; plans: number }> {
  const none = { outage: false, plans: 0 };
  if (ctx.config.executor.expected === false) return none;
  const now = ctx.clock();
  if (now.getTime() - input.watchingSince < missingAfterMs(ctx.config)) return none;
  if (claimsWaitingHere(ctx.database) > 0) return none;
  const presence = await executorPresence(ctx);
  if (presence.connected > 0 || (await pauseNow(ctx))) return none;
  const outage = !presence.absenceNoticed && (await announceOutage(ctx, presence, now));
  return { outage, plans: await tellWaitingPlans(ctx, presence, now) };
}

/** Marks the outage as told and queues its notices, unless another replica (or an earlier run) did. */
async function announceOutage(ctx: ServiceContext, presence: Presence, now: Date): Promise<boolean> {
  const cutoff = new Date(now.getTime() - missingAfterMs(ctx.config)).toISOString();
  return ctx.database.db.transaction(async (tx) => {
    // The newest row stands for the outage: seeing any executor again clears its mark, or makes another row the newest.
    const marked = await ctx.database.rows(
      sql`UPDATE executor_presence SET absence_noticed_at = ${now.toISOString()}::timestamptz
           WHERE executor = (SELECT executor FROM executor_presence ORDER BY last_seen_at DESC NULLS LAST LIMIT 1)
             AND absence_noticed_at IS NULL AND (last_seen_at IS NULL OR last_seen_at <= ${cutoff}::timestamptz)
          RETURNING executor`,
      tx,
    );
    if (marked.length === 0) {
      if (presence.lastSeenAt !== null) return false;
      const first = await ctx.database.rows(
        sql`INSERT INTO executor_presence (executor, absence_noticed_at) VALUES (${NONE_SEEN}, ${now.toISOString()}::timestamptz)
            ON CONFLICT (executor) DO NOTHING RETURNING executor`,
        tx,
      );
      if (first.length === 0) return false;
    }
    const lastSeenAt = presence.lastSeenAt?.toISOString() ?? null;
    const missingAfterSeconds = missingAfterMs(ctx.config) / 1000;
    await appendAudit(tx, { planId: null, type: EXECUTORS_MISSING_EVENT, actor: ACTOR, at: now, data: { lastSeenAt, missingAfterSeconds } });
    const channels = ctx.config.slack.enabled ? reviewChannels(ctx.config) : [];
    if (channels.length > 0) {
      const notices: ExecutorsMissingNotice[] = channels.map((channel) => ({
        type: EXECUTORS_MISSING_EVENT,
        channel,
        lastSeenAt,
        missingAfterSeconds,
        at: now.toISOString(),
      }));
      await tx.insert(outbox).values(notices.map((n) => ({ planId: null, kind: NOTICE_SINK, lane: noticeLaneOf(n.channel), payload: n, availableAt: now })));
    }
    ctx.logger.warn(
      { lastSeenAt, missingAfterSeconds },
      lastSeenAt
        ? `no executor is connected: none has asked for work since ${lastSeenAt}; approved plans wait until one does`
        : "no executor has asked for work yet; approved plans wait until one does",
    );
    return true;
  });
}

/** Gives each approved plan not yet told its `plan.no_executor` event (a thread reply in Slack, a wake-up for its page and waiters). */
async function tellWaitingPlans(ctx: ServiceContext, presence: Presence, now: Date): Promise<number> {
  const untold = sql`NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.plan_id = ${plans.id} AND e.type = ${NO_EXECUTOR_EVENT})`;
  const waiting = await ctx.database.db
    .select({ id: plans.id })
    .from(plans)
    .where(and(statusIs("approved"), gt(plans.grantExpiresAt, now), untold))
    .orderBy(asc(plans.createdAt))
    .limit(PLANS_PER_RUN);
  // Only the thread hears of it: the agent's webhook is for status changes, and no Home lists approved plans.
  const slackOnly = { ...ctx, sinks: ctx.sinks.filter((kind) => kind === "slack") };
  let told = 0;
  for (const { id } of waiting) {
    told += await ctx.database.db.transaction(async (tx) => {
      const [row] = await tx
        .select()
        .from(plans)
        .where(and(eq(plans.id, id), statusIs("approved")))
        .for("update");
      if (!row) return 0;
      // Read after the lock, in a statement of its own: another replica's event committed while this one waited is seen.
      const [told] = await ctx.database.rows(sql`SELECT 1 FROM audit_events WHERE plan_id = ${id} AND type = ${NO_EXECUTOR_EVENT} LIMIT 1`, tx);
      if (told) return 0;
      const since = new Date(Math.max(row.updatedAt.getTime(), presence.lastSeenAt?.getTime() ?? 0)).toISOString();
      await tx.execute(
        planEventStatement(slackOnly, tx, {
          plan: row,
          type: NO_EXECUTOR_EVENT,
          actor: ACTOR,
          at: now,
          data: { lastSeenAt: presence.lastSeenAt?.toISOString() ?? null, since },
          // Pages and waiters look again; executors are woken only by approvals.
          announce: "held",
        }),
      );
      return 1;
    });
  }
  return told;
}
