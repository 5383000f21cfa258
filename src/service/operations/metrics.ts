import { sql, type SQL } from "drizzle-orm";
import { PLAN_STATUSES } from "../../plan/status.ts";
import type { ServiceContext } from "../context.ts";
import { laneHealth } from "../delivery/lane-health.ts";
import { connectedSince } from "../execution/executor-presence.ts";
import { ServiceError } from "../errors.ts";

/**
 * Approval health (`GET /metrics`), computed from the database at scrape time so every
 * replica answers the same and a restart loses nothing. The counters and histograms are counted
 * from the audit log, which is append-only (a retention purge prunes only events this rollup has
 * already summed, so purged plans stay counted unless the rollup starts over): each event is one
 * fact (a plan reached a status, a person decided, a plan expired, so many seconds passed). To
 * keep a scrape cheap however long the log grows, the facts of events up to the newest seal are
 * summed into metrics_rollup once (seals cover only committed events, so nothing sealed can still
 * appear), and a scrape reads that rollup plus the events since, through audit_events_xid.
 */

/** Histogram bounds in seconds (`le`), for time to decision and approval → applied. */
export const SECONDS_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14_400, 28_800, 86_400] as const;

/** A histogram as Prometheus shows it: cumulative counts per bound (`+Inf` is `count`). */
export interface HistogramSnapshot {
  buckets: { le: number; count: number }[];
  count: number;
  sum: number;
}

export interface MetricsSnapshot {
  /** Plans that reached each status (a takeover enters `executing` again; `pending` counts submissions). */
  plansTotal: { status: string; count: number }[];
  pendingPlans: number;
  /** Executors connected now (executor-presence.ts): by the database, so every replica says the same. */
  executorsConnected: number;
  decisionsTotal: { verdict: string; via: string; count: number }[];
  refusalsTotal: { code: string; count: number }[];
  /** Expiries by the status the plan expired from: `pending` is a plan nobody decided in time. */
  expiredTotal: { from: string; count: number }[];
  /** Submission → the approval or rejection that ended the plan's review. */
  timeToDecision: HistogramSnapshot;
  /** Approval → applied. */
  apply: HistogramSnapshot;
  lanes: { lane: string; backlog: number; oldestSeconds: number }[];
}

interface FactRow {
  metric: string;
  label: string;
  bucket: number | string;
  count: number | string;
  sum: number | string;
}

const STATUS_EVENTS = PLAN_STATUSES.map((s) => `plan.${s}`);
const BUCKETS_SPEC = SECONDS_BUCKETS.join(",");
const BOUNDS = sql.raw(`ARRAY[${BUCKETS_SPEC}]::float8[]`);
/** Serializes rollups across replicas (a transaction-level advisory lock; a busy one is skipped). */
const ROLLUP_LOCK = 1_416_001;

/**
 * The facts of the audit events `where` selects, summed per metric, label and bucket. `bucket`
 * is -1 for counters and, for durations, the index of the first bound ≥ the seconds (the bounds'
 * length for +Inf). Lookups go to the plan's own chain (audit_events_plan), so a fact is the same
 * whichever replica or rollup counts it.
 */
function factsOf(where: SQL): SQL {
  return sql`
    SELECT f.metric, f.label,
      CASE WHEN f.seconds IS NULL THEN -1 ELSE (SELECT count(*) FROM unnest(${BOUNDS}) b WHERE b < f.seconds) END AS bucket,
      count(*) AS count, coalesce(sum(f.seconds), 0) AS sum
    FROM audit_events e
    CROSS JOIN LATERAL (
      SELECT e.type, e.actor::json AS actor,
        CASE WHEN e.type IN ('plan.approved', 'plan.rejected') THEN greatest(0, extract(epoch FROM e.at - (
          SELECT s.at FROM audit_events s WHERE s.plan_id = e.plan_id ORDER BY s.id LIMIT 1))) END AS decision_seconds,
        CASE WHEN e.type = 'plan.applied' THEN greatest(0, extract(epoch FROM e.at - (
          SELECT s.at FROM audit_events s WHERE s.plan_id = e.plan_id AND s.id < e.id AND s.type = 'plan.approved' ORDER BY s.id DESC LIMIT 1))) END AS apply_seconds,
        CASE WHEN e.type = 'plan.expired' THEN (
          SELECT CASE s.type WHEN 'plan.executing' THEN 'executing' WHEN 'plan.approved' THEN 'approved' ELSE 'pending' END
          FROM audit_events s WHERE s.plan_id = e.plan_id AND s.id < e.id AND s.type IN ('plan.submitted', 'plan.approved', 'plan.executing')
          ORDER BY s.id DESC LIMIT 1) END AS expired_from
    ) ev
    CROSS JOIN LATERAL (VALUES
      ('plans', CASE WHEN ev.type = 'plan.submitted' THEN 'pending' WHEN ev.type = ANY (${sql.raw(`ARRAY[${STATUS_EVENTS.map((t) => `'${t}'`).join(", ")}]`)}) THEN substr(ev.type, 6) END, NULL::float8),
      ('decisions', CASE WHEN ev.type = 'decision.approve' OR (ev.type = 'plan.rejected' AND ev.actor->>'type' = 'user')
        THEN CASE WHEN ev.type = 'decision.approve' THEN 'approve' ELSE 'reject' END || '|' || coalesce(ev.actor->>'via', ev.actor->>'type') END, NULL::float8),
      ('expired', ev.expired_from, NULL::float8),
      ('time_to_decision', CASE WHEN ev.decision_seconds IS NOT NULL THEN '' END, ev.decision_seconds::float8),
      ('apply', CASE WHEN ev.apply_seconds IS NOT NULL THEN '' END, ev.apply_seconds::float8)
    ) AS f(metric, label, seconds)
    WHERE ${where} AND f.label IS NOT NULL
    GROUP BY 1, 2, 3`;
}

/** At most about this many events are summed per rollup transaction (whole seals; at least one). */
const ROLLUP_STEP_EVENTS = 50_000;

/**
 * Adds the facts of sealed events to metrics_rollup, by whichever replica gets there first
 * (another one rolling up at the same time is skipped, not waited for). Each step is its own
 * transaction over about ROLLUP_STEP_EVENTS events, whole seals, so a first rollup over years of
 * history (216 s for 5 M events at 1 M plans, load 27) never holds one long transaction, which
 * would hold every seal back; `maxSteps` bounds a call. A rollup counted with other histogram
 * bounds is started over. Returns whether it caught up with the newest seal.
 */
export async function rollUpMetrics(ctx: Pick<ServiceContext, "database">, input: { maxSteps?: number } = {}): Promise<boolean> {
  for (let step = 0; step < (input.maxSteps ?? 1); step++) {
    const outcome = await rollUpStep(ctx);
    if (outcome !== "more") return outcome === "done";
  }
  return false;
}

async function rollUpStep(ctx: Pick<ServiceContext, "database">): Promise<"done" | "more" | "busy"> {
  return ctx.database.db.transaction(async (tx) => {
    const rows = <T>(q: SQL) => ctx.database.rows<T>(q, tx);
    const [lock] = await rows<{ ok: boolean }>(sql`SELECT pg_try_advisory_xact_lock(${ROLLUP_LOCK}) AS ok`);
    if (!lock?.ok) return "busy";
    const [state] = await rows<{ through: string; buckets: string }>(sql`SELECT through_xid::text AS through, buckets FROM metrics_rollup_state WHERE id = 1`);
    const fresh = !state || state.buckets !== BUCKETS_SPEC;
    const through = fresh ? "0" : state.through;
    // The newest seal within a step of where the rollup stands, or else the next seal alone.
    const [target] = await rows<{ xid_to: string; last: boolean }>(sql`
      WITH base AS (SELECT coalesce((SELECT events_total FROM audit_seals WHERE xid_to = ${through}::xid8 ORDER BY seq DESC LIMIT 1), 0) AS n),
      newest AS (SELECT seq FROM audit_seals ORDER BY seq DESC LIMIT 1),
      pick AS (
        (SELECT seq, xid_to FROM audit_seals WHERE xid_to > ${through}::xid8 AND events_total <= (SELECT n FROM base) + ${ROLLUP_STEP_EVENTS} ORDER BY seq DESC LIMIT 1)
        UNION ALL
        (SELECT seq, xid_to FROM audit_seals WHERE xid_to > ${through}::xid8 ORDER BY seq LIMIT 1))
      SELECT xid_to::text AS xid_to, seq = (SELECT seq FROM newest) AS last FROM pick ORDER BY seq DESC LIMIT 1`);
    if (!target) return "done";
    if (fresh) await tx.execute(sql`DELETE FROM metrics_rollup`);
    await tx.execute(sql`SET LOCAL jit = off`); // see readMetrics
    const range = fresh ? sql`e.xid < ${target.xid_to}::xid8` : sql`e.xid >= ${through}::xid8 AND e.xid < ${target.xid_to}::xid8`;
    await tx.execute(sql`
      INSERT INTO metrics_rollup (metric, label, bucket, count, sum)
      SELECT metric, label, bucket, count, sum FROM (${factsOf(range)}) AS facts
      ON CONFLICT (metric, label, bucket) DO UPDATE SET count = metrics_rollup.count + excluded.count, sum = metrics_rollup.sum + excluded.sum`);
    await tx.execute(sql`
      INSERT INTO metrics_rollup_state (id, through_xid, buckets) VALUES (1, ${target.xid_to}::xid8, ${BUCKETS_SPEC})
      ON CONFLICT (id) DO UPDATE SET through_xid = excluded.through_xid, buckets = excluded.buckets`);
    return target.last ? "done" : "more";
  });
}

/**
 * Every metric, as one consistent read: the rollup, the events since it and the refusal counts
 * in one statement (one snapshot, so a rollup another replica commits meanwhile is counted
 * either whole or not at all), the pending count from plans_pending_expiry, and the outbox lanes
 * as the visibility page reads them.
 */
export async function readMetrics(
  ctx: Pick<ServiceContext, "database" | "clock"> & { config?: Pick<ServiceContext["config"], "executor"> },
): Promise<MetricsSnapshot> {
  await rollUpMetrics(ctx);
  // JIT off: the statement's plan for "no rollup yet" estimates a scan of the whole log, which
  // made PostgreSQL spend 3.4 s compiling a read that then ran in 20 ms.
  const facts = await ctx.database.db.transaction(async (tx) => {
    await tx.execute(sql`SET LOCAL jit = off`);
    return ctx.database.rows<FactRow>(metricsStatement(connectedSince(ctx)), tx);
  });
  const lanes = await laneHealth(ctx);
  return snapshotOf(
    facts,
    lanes.map((l) => ({ lane: l.lane, backlog: l.backlog, oldestSeconds: l.oldestUndeliveredSeconds })),
  );
}

/** readMetrics' one statement (bench/metrics-scrape.ts EXPLAINs it); executors seen after `executorsSince` are connected. */
export function metricsStatement(executorsSince: Date = new Date(Date.now() - 60_000)): SQL {
  return sql`
    WITH state AS (SELECT through_xid FROM metrics_rollup_state WHERE id = 1 AND buckets = ${BUCKETS_SPEC}),
    since AS (
      ${factsOf(sql`e.xid >= (SELECT through_xid FROM state)`)}
      UNION ALL
      ${factsOf(sql`NOT EXISTS (SELECT 1 FROM state)`)}),
    rolled AS (SELECT metric, label, bucket, count, sum FROM metrics_rollup WHERE EXISTS (SELECT 1 FROM state))
    SELECT metric, label, bucket, sum(count) AS count, sum(sum) AS sum
    FROM (SELECT * FROM since UNION ALL SELECT * FROM rolled
          UNION ALL SELECT 'refusals', code, -1, count, 0 FROM refusal_counts
          UNION ALL SELECT 'pending', '', -1, (SELECT count(*) FROM plans WHERE status = 'pending'), 0
          UNION ALL SELECT 'executors', '', -1, (SELECT count(*) FROM executor_presence WHERE last_seen_at > ${executorsSince.toISOString()}::timestamptz), 0) AS every
    GROUP BY 1, 2, 3`;
}

/** The rows of readMetrics' statement as metrics. Pure. */
export function snapshotOf(rows: FactRow[], lanes: MetricsSnapshot["lanes"]): MetricsSnapshot {
  const of = (metric: string) =>
    rows.filter((r) => r.metric === metric).map((r) => ({ label: r.label, bucket: Number(r.bucket), count: Number(r.count), sum: Number(r.sum) }));
  const counter = (metric: string) => of(metric).filter((r) => r.bucket === -1);
  const histogram = (metric: string): HistogramSnapshot => {
    const parts = of(metric);
    let running = 0;
    const buckets = SECONDS_BUCKETS.map((le, i) => {
      running += parts.filter((p) => p.bucket === i).reduce((n, p) => n + p.count, 0);
      return { le, count: running };
    });
    return { buckets, count: parts.reduce((n, p) => n + p.count, 0), sum: parts.reduce((n, p) => n + p.sum, 0) };
  };
  const byLabel = (a: { label: string }, b: { label: string }) => a.label.localeCompare(b.label);
  return {
    plansTotal: counter("plans")
      .sort(byLabel)
      .map((r) => ({ status: r.label, count: r.count })),
    pendingPlans: counter("pending")[0]?.count ?? 0,
    executorsConnected: counter("executors")[0]?.count ?? 0,
    decisionsTotal: counter("decisions")
      .sort(byLabel)
      .map((r) => {
        const [verdict = "", via = ""] = r.label.split("|");
        return { verdict, via, count: r.count };
      }),
    refusalsTotal: counter("refusals")
      .sort(byLabel)
      .map((r) => ({ code: r.label, count: r.count })),
    expiredTotal: counter("expired")
      .sort(byLabel)
      .map((r) => ({ from: r.label, count: r.count })),
    timeToDecision: histogram("time_to_decision"),
    apply: histogram("apply"),
    lanes,
  };
}

/** Counts `err` when it is a refusal (a ServiceError); the Slack and browser doors answer theirs themselves. */
export async function countIfRefusal(ctx: Pick<ServiceContext, "database" | "logger">, err: unknown): Promise<void> {
  if (err instanceof ServiceError) await countRefusal(ctx, { code: err.code, waitMs: 1000 });
}

/**
 * Counts one refusal answered with `code` (refusal_counts). A refusal records nothing else, so
 * this is its only trace; a failure to count is logged, never turned into a different answer.
 * With `waitMs` it resolves after at most that long (the count carries on): a refusal that needs
 * no database, answered during an outage, is not held for the driver's connect timeout.
 */
export async function countRefusal(ctx: Pick<ServiceContext, "database" | "logger">, input: { code: string; waitMs?: number }): Promise<void> {
  const counted = ctx.database.db
    .execute(sql`
      INSERT INTO refusal_counts (code, count) VALUES (${input.code}, 1)
      ON CONFLICT (code) DO UPDATE SET count = refusal_counts.count + 1`)
    .then(
      () => undefined,
      (err: unknown) => ctx.logger.warn({ err, code: input.code }, "could not count a refusal for /metrics"),
    );
  if (input.waitMs === undefined) return counted;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([counted, new Promise<void>((resolve) => (timer = setTimeout(resolve, input.waitMs)))]);
  clearTimeout(timer);
}
