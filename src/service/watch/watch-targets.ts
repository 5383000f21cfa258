import { and, asc, eq, gt, inArray, isNull, notExists, sql, type SQL } from "drizzle-orm";
import type { TargetState } from "../../adapters/adapter.ts";
import { staleOutcome } from "../../plan/drift.ts";
import type { ActionOutcome, Outcome } from "../../plan/outcome.ts";
import type { ActionPreview } from "../../contract/agent-api.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import { plans, targetWatches, watchedActions } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { effectsInsert, outboxRowsOf } from "../records/outbox.ts";
import { transition } from "../lifecycle/transition.ts";
import { statusIn } from "../../store/plan-status-sql.ts";

/** The plans a watch looks after: pending, and approved ones no executor has claimed yet. */
const WATCHED_STATUSES = ["pending", "approved"] as const;
/** Reads of one target at once, per replica: the watcher must never hammer a target. */
const READS_PER_TARGET = 4;
/** New plans taken into the watch list per pass, and resources read per pass. */
const REGISTER_BATCH = 100;
const READ_BATCH = 50;

export interface WatchPassResult {
  /** Resources read this pass, and how many of those reads failed. */
  read: number;
  failed: number;
  /** Plans this pass moved to stale. */
  stale: string[];
}

/**
 * One pass of the server's target watcher: take new open plans into the watch list,
 * lease the resources due for a read (at most one read per resource per interval, whatever
 * the replicas: the lease pushes `next_at` ahead in the statement that takes the row), read
 * each with the read credential outside any transaction, and move every open plan whose
 * precondition no longer holds to `stale` by the `drift` transition, one transaction each.
 * A read that fails keeps the plans open and records since when reads have failed.
 */
export async function watchTargets(ctx: ServiceContext, { replica }: { replica: string }): Promise<WatchPassResult> {
  const result: WatchPassResult = { read: 0, failed: 0, stale: [] };
  const intervals = watchIntervals(ctx);
  if (intervals.size === 0) return result;
  await registerNewPlans(ctx, intervals, replica);
  const due = await leaseDue(ctx, intervals, replica);
  // Bounded concurrency per target: each target's resources are read by a few workers in turn.
  const byTarget = new Map<string, Leased[]>();
  for (const row of due) byTarget.set(row.target, [...(byTarget.get(row.target) ?? []), row]);
  await Promise.all(
    [...byTarget.values()].flatMap((rows) => {
      const queue = [...rows];
      return Array.from({ length: Math.min(READS_PER_TARGET, queue.length) }, async () => {
        for (let row = queue.shift(); row; row = queue.shift()) {
          const checked = await checkResource(ctx, row);
          result.read += checked.read ? 1 : 0;
          result.failed += checked.failed ? 1 : 0;
          result.stale.push(...checked.stale);
        }
      });
    }),
  );
  if (result.stale.length > 0) ctx.logger.info({ planIds: result.stale }, "targets changed under open plans: stale");
  return result;
}

/** Seconds between reads, by target, for the targets that are watched (interval above 0). */
function watchIntervals(ctx: Pick<ServiceContext, "config">): Map<string, number> {
  return new Map(
    Object.entries(ctx.config.targets).flatMap(([name, target]) => (target.watch.intervalSeconds > 0 ? [[name, target.watch.intervalSeconds] as const] : [])),
  );
}

/**
 * Where each replica's listing stands: plans created before `since` are all listed (a full pass
 * found none left). Between full passes only recent plans are looked at, so a pass with nothing
 * new costs the plans of the last minute, not every open plan (bench/watch.ts).
 */
const listings = new WeakMap<object, Map<string, { since: number; fullAt: number }>>();
/** How far back a pass looks: a plan's created_at is read before its insert commits. */
const LISTING_OVERLAP_MS = 60_000;
/** A full pass now and then lists what a replica could not see (one started after the plan, or a restart). */
const FULL_LISTING_EVERY_MS = 5 * 60_000;

/**
 * Open plans not yet in the watch list, found by one anti-join on the list's primary key (no
 * document is read twice), over recent plans only between full passes: their actions are listed,
 * and each watched resource gets a watch, first due at a random point of its interval so reads
 * spread over time. Every action is listed, watched target or not, so a plan is taken in once.
 */
async function registerNewPlans(ctx: ServiceContext, intervals: Map<string, number>, replica: string): Promise<void> {
  const { db } = ctx.database;
  const startedAt = ctx.clock().getTime();
  let listing = listings.get(ctx.database);
  if (!listing) listings.set(ctx.database, (listing = new Map()));
  const state = listing.get(replica);
  // A clock that stepped back also gets a full pass.
  const full = !state || startedAt - state.fullAt >= FULL_LISTING_EVERY_MS || startedAt < state.since;
  const recent = full ? undefined : gt(plans.createdAt, new Date(state!.since - LISTING_OVERLAP_MS));
  const fresh = await db
    .select({ id: plans.id, document: plans.document })
    .from(plans)
    .where(and(statusIn(WATCHED_STATUSES), recent, notExists(db.select({ one: sql`1` }).from(watchedActions).where(eq(watchedActions.planId, plans.id)))))
    .limit(REGISTER_BATCH);
  // Everything found is listed below; a full batch means more may wait, so the mark stays put.
  if (fresh.length < REGISTER_BATCH) listing.set(replica, { since: startedAt, fullAt: full ? startedAt : state!.fullAt });
  // The list keeps only open plans: rows of plans on unwatched targets are never met by a read,
  // so a full pass drops what closed since the last (a table about the size of the open plans).
  if (full) {
    await db.delete(watchedActions).where(
      notExists(
        db
          .select({ one: sql`1` })
          .from(plans)
          .where(and(eq(plans.id, watchedActions.planId), statusIn(WATCHED_STATUSES))),
      ),
    );
  }
  if (fresh.length === 0) return;
  const now = ctx.clock().getTime();
  const actions = fresh.flatMap((plan) =>
    (plan.document as PlanDocument).actions.map((a, i) => ({ planId: plan.id, actionIndex: i, target: a.target, path: a.path })),
  );
  const watches = [...new Map(actions.filter((a) => intervals.has(a.target)).map((a) => [`${a.target}\n${a.path}`, a])).values()].map((a) => ({
    target: a.target,
    path: a.path,
    nextAt: new Date(now + Math.random() * intervals.get(a.target)! * 1000),
  }));
  const listed = db.insert(watchedActions).values(actions).onConflictDoNothing();
  if (watches.length === 0) return void (await listed);
  // One statement: the list and the watches it needs.
  await db.execute(sql`WITH listed AS (${listed.getSQL()}) ${db.insert(targetWatches).values(watches).onConflictDoNothing().getSQL()}`);
}

interface Leased {
  target: string;
  path: string;
}

/**
 * Takes the watches due now, at most READ_BATCH, skipping those another replica holds, and sets
 * each one's next read one interval ahead in the same statement: once this commits no replica
 * reads the resource again before then, whatever happens to this one.
 */
async function leaseDue(ctx: ServiceContext, intervals: Map<string, number>, replica: string): Promise<Leased[]> {
  const now = ctx.clock();
  const names = [...intervals.keys()];
  const seconds = sql.join(
    names.map((name) => sql`WHEN ${name} THEN ${intervals.get(name)!}::int`),
    sql` `,
  );
  const leaseMs = Math.max(...names.map((n) => ctx.config.targets[n]!.timeoutMs)) * 2;
  return ctx.database.rows<Leased>(sql`
    UPDATE target_watches w
       SET next_at = ${now.toISOString()}::timestamptz + make_interval(secs => CASE w.target ${seconds} END),
           leased_by = ${replica}, leased_until = ${new Date(now.getTime() + leaseMs).toISOString()}::timestamptz
      FROM (SELECT target, path FROM target_watches
             WHERE next_at <= ${now.toISOString()}::timestamptz AND target IN (${sql.join(
               names.map((n) => sql`${n}`),
               sql`, `,
             )})
             ORDER BY next_at LIMIT ${READ_BATCH}
             FOR UPDATE SKIP LOCKED) due
     WHERE w.target = due.target AND w.path = due.path
    RETURNING w.target, w.path`);
}

/** The open plans' actions on one resource, with what each was previewed against. */
interface Watcher {
  planId: string;
  actionIndex: number;
  document: PlanDocument;
  preview: { actions: ActionPreview[] };
}

/**
 * Reads one leased resource once, with the target's reader (read credential), and has its
 * adapter judge every open plan on it, as the executor's revalidation would: stale when the
 * precondition no longer holds and the target does not already hold the plan's change. No plan
 * open on it any more: its watch and list rows are dropped instead, and nothing is read.
 */
async function checkResource(ctx: ServiceContext, row: Leased): Promise<{ read: boolean; failed: boolean; stale: string[] }> {
  const { db } = ctx.database;
  const on = and(eq(watchedActions.target, row.target), eq(watchedActions.path, row.path));
  const listed = await db
    .select({ planId: watchedActions.planId, actionIndex: watchedActions.actionIndex, status: plans.status })
    .from(watchedActions)
    .leftJoin(plans, eq(plans.id, watchedActions.planId))
    .where(on)
    .orderBy(asc(watchedActions.planId));
  const open = listed.filter((l) => l.status === "pending" || l.status === "approved");
  const closed = listed.filter((l) => !open.includes(l)).map((l) => l.planId);
  if (closed.length > 0) await db.delete(watchedActions).where(and(on, inArray(watchedActions.planId, closed)));
  if (open.length === 0) {
    await dropWatch(ctx, row);
    return { read: false, failed: false, stale: [] };
  }

  // Documents first (cached): any open plan's action on the resource tells its adapter what to read.
  const watchers = (await loadWatchers(ctx, open)).flatMap((w) => {
    const action = w.document.actions[w.actionIndex];
    return action ? [{ ...w, action }] : [];
  });
  if (watchers.length === 0) return { read: false, failed: false, stale: [] };
  const { adapter } = ctx.targets.targetOf(row.target);
  let current: TargetState;
  try {
    current = await ctx.targets.readerFor(row.target).read(watchers[0]!.action);
  } catch (err) {
    const at = ctx.clock();
    const lastError = (err as Error).message.slice(0, 2000);
    // The first failure of a run starts it (and tells reviewers); later ones only keep the error.
    const started = await db
      .update(targetWatches)
      .set({ failedSince: at, lastError, leasedBy: null, leasedUntil: null })
      .where(and(eq(targetWatches.target, row.target), eq(targetWatches.path, row.path), isNull(targetWatches.failedSince)))
      .returning({ target: targetWatches.target });
    if (started.length === 0) {
      await db
        .update(targetWatches)
        .set({ lastError, leasedBy: null, leasedUntil: null })
        .where(and(eq(targetWatches.target, row.target), eq(targetWatches.path, row.path)));
    } else
      await showWatchOnSlack(
        ctx,
        open.map((o) => o.planId),
        at,
      );
    ctx.logger.warn({ target: row.target, path: row.path, err: lastError }, "a watched target could not be re-read; its plans stay open");
    return { read: true, failed: true, stale: [] };
  }
  const checkedAt = ctx.clock();
  // One statement whether or not reads had been failing (a watch read per plan or so in a burst):
  // the row as it was, locked, says whether this read ends a run of failures.
  const [done] = await ctx.database.rows<{ recovered: boolean }>(sql`
    UPDATE target_watches w SET checked_at = ${checkedAt.toISOString()}::timestamptz, failed_since = NULL, last_error = NULL, leased_by = NULL, leased_until = NULL
      FROM (SELECT target, path, failed_since FROM target_watches WHERE target = ${row.target} AND path = ${row.path} FOR UPDATE) was
     WHERE w.target = was.target AND w.path = was.path
    RETURNING was.failed_since IS NOT NULL AS recovered`);
  const recovered = done?.recovered === true;

  // One read judged for every plan on the resource, by the rule the executor and the Approve re-check use.
  const stale: string[] = [];
  for (const w of watchers) {
    const seen = w.preview.actions[w.actionIndex];
    const judged = adapter.judge(w.action, { before: seen?.before ?? null, after: seen?.after ?? null }, current);
    if (judged.state === "stale" && (await markStale(ctx, w.planId, w.document, [staleOutcome(w.action, w.actionIndex, judged)], "watcher")))
      stale.push(w.planId);
  }
  // Plans that stay open show again that they are re-checked (a stale one's transition updates it).
  if (recovered)
    await showWatchOnSlack(
      ctx,
      open.map((o) => o.planId).filter((id) => !stale.includes(id)),
      checkedAt,
    );
  return { read: true, failed: false, stale };
}

/**
 * Re-renders the Slack messages of open plans whose watch started or stopped failing, so
 * reviewers see "could not re-check since HH:MM" when it happens rather than at the next
 * decision. A Slack-only outbox row (`plan.watch`, no thread reply, no webhook): nothing about
 * the plan changed, so there is no audit event either; the message shows the plan as it is now.
 */
async function showWatchOnSlack(ctx: ServiceContext, planIds: string[], at: Date): Promise<void> {
  if (!ctx.sinks.includes("slack") || planIds.length === 0) return;
  const { db } = ctx.database;
  const rows = await db
    .select({ id: plans.id, status: plans.status, hash: plans.hash, document: plans.document })
    .from(plans)
    .where(and(inArray(plans.id, planIds), inArray(plans.status, [...WATCHED_STATUSES])));
  for (const plan of rows) {
    const event = { type: "plan.watch", status: plan.status, at: at.toISOString(), actor: { type: "system", process: "watcher" } };
    const insert = effectsInsert(outboxRowsOf(ctx, { ...plan, callbackUrl: null }, event, ["slack"]));
    if (insert) await db.execute(insert);
  }
}

/** Drops a watch no open plan needs, unless a plan was listed on it meanwhile. */
async function dropWatch(ctx: ServiceContext, row: Leased): Promise<void> {
  const { db } = ctx.database;
  await db.delete(targetWatches).where(
    and(
      eq(targetWatches.target, row.target),
      eq(targetWatches.path, row.path),
      notExists(
        db
          .select({ one: sql`1` })
          .from(watchedActions)
          .where(and(eq(watchedActions.target, row.target), eq(watchedActions.path, row.path))),
      ),
    ),
  );
}

/**
 * Documents and previews never change, so each plan's is read once per process and kept
 * (bounded, oldest dropped first): a resource re-read every interval does not reload them.
 */
const MAX_CACHED = 5000;
const cache = new WeakMap<object, Map<string, Pick<Watcher, "document" | "preview">>>();

async function loadWatchers(ctx: ServiceContext, open: { planId: string; actionIndex: number }[]): Promise<Watcher[]> {
  let known = cache.get(ctx.database);
  if (!known) cache.set(ctx.database, (known = new Map()));
  const missing = open.map((o) => o.planId).filter((id) => !known.has(id));
  if (missing.length > 0) {
    const rows = await ctx.database.db.select({ id: plans.id, document: plans.document, preview: plans.preview }).from(plans).where(inArray(plans.id, missing));
    for (const r of rows) {
      known.set(r.id, { document: r.document as PlanDocument, preview: r.preview as Watcher["preview"] });
      if (known.size > MAX_CACHED) known.delete(known.keys().next().value!);
    }
  }
  return open.flatMap((o) => {
    const plan = known.get(o.planId);
    return plan ? [{ planId: o.planId, actionIndex: o.actionIndex, ...plan }] : [];
  });
}

/**
 * The plan moves from pending or approved to stale, as a system transition through the one
 * transition path (audit event, webhook and Slack update enqueued), with the outcome an
 * executor would have reported: the drifted actions say what changed, the others were skipped.
 * False when the plan had already left those statuses (decided, claimed, stale already).
 */
export async function markStale(
  ctx: ServiceContext,
  planId: string,
  document: Pick<PlanDocument, "actions">,
  drifted: ActionOutcome[],
  process: "watcher" | "approve re-check",
  guard?: SQL,
): Promise<boolean> {
  const outcome: Outcome = {
    status: "stale",
    reason: `${drifted.map((d) => `${d.target} ${d.path}`).join(", ")} changed since the preview, before the plan was applied; nothing was written. Re-plan from the current state.`,
    actions: document.actions.map((a, i) => drifted.find((d) => d.index === i) ?? { index: i, target: a.target, path: a.path, status: "skipped" }),
  };
  const row = await ctx.database.db.transaction((tx) =>
    transition(ctx, tx, {
      planId,
      transition: "drift",
      actor: { type: "system", process },
      set: { outcome },
      data: { reason: outcome.reason, changed: drifted.map((d) => ({ target: d.target, path: d.path })) },
      ...(guard ? { guard } : {}),
    }),
  );
  return row !== undefined;
}
