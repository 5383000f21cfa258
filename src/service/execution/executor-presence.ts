import { sql } from "drizzle-orm";
import { DEFAULT_MISSING_AFTER_SECONDS } from "../../config/schema.ts";
import type { Database } from "../../store/db.ts";
import type { ServiceContext } from "../context.ts";

/** Who asks for work without naming itself (an executor without EXECUTOR_ID_HEADER, a script): counted as one executor. */
export const UNNAMED_EXECUTOR = "unnamed";

/** The id of executor_presence's row that stands for "no executor seen yet" (schema.ts). */
export const NONE_SEEN = "";

type PresenceContext = Pick<ServiceContext, "database" | "clock" | "config">;

/** `executor.missingAfterSeconds` in milliseconds: how long after its last sign an executor still counts as connected. */
export function missingAfterMs(config: Pick<PresenceContext["config"], "executor"> | undefined): number {
  return (config?.executor.missingAfterSeconds ?? DEFAULT_MISSING_AFTER_SECONDS) * 1000;
}

/**
 * How often one replica writes one executor's last-seen time at most: a quarter of
 * missingAfterSeconds, so a steadily polling executor never looks missing, and 5 s at most.
 */
function writeEveryMs(config: PresenceContext["config"]): number {
  return Math.min(5000, missingAfterMs(config) / 4);
}

/** When this replica last wrote each executor's row (ctx.clock), per Database so test files and servers in one process do not share it. */
const writtenBy = new WeakMap<Database, Map<string, number>>();
/** Ids are the executors' own: the memory of them is bounded, the database row is what counts. */
const MAX_REMEMBERED = 1000;

/**
 * An executor asked for work, kept a heartbeat or reported: its row's last_seen_at moves to now,
 * at most once per writeEveryMs per executor on this replica. Seeing it again clears the mark of
 * an announced absence, so the next outage is announced too (missing-executors.ts).
 */
export async function executorSeen(ctx: PresenceContext, executor: string | undefined): Promise<void> {
  const id = executor ?? UNNAMED_EXECUTOR;
  const now = ctx.clock().getTime();
  let written = writtenBy.get(ctx.database);
  if (!written) writtenBy.set(ctx.database, (written = new Map()));
  const last = written.get(id);
  if (last !== undefined && now >= last && now - last < writeEveryMs(ctx.config)) return;
  if (written.size >= MAX_REMEMBERED) for (const [k, at] of written) if (now - at > missingAfterMs(ctx.config)) written.delete(k);
  written.set(id, now);
  try {
    await ctx.database.db.execute(sql`
      INSERT INTO executor_presence (executor, last_seen_at) VALUES (${id}, ${new Date(now).toISOString()}::timestamptz)
      ON CONFLICT (executor) DO UPDATE SET last_seen_at = excluded.last_seen_at, absence_noticed_at = NULL
        WHERE executor_presence.last_seen_at IS NULL OR executor_presence.last_seen_at < excluded.last_seen_at`);
  } catch (err) {
    written.delete(id); // the next request tries again
    throw err;
  }
}

/**
 * How many executors are connected now, by the database every replica shares, when one was last
 * seen (null: never), and whether their absence since then has been announced.
 */
export interface Presence {
  connected: number;
  lastSeenAt: Date | null;
  absenceNoticed: boolean;
}

export async function executorPresence(ctx: PresenceContext): Promise<Presence> {
  const [row] = await ctx.database.rows<{ connected: string | number; last_seen: string | Date | null; noticed: boolean | null }>(sql`
    SELECT count(*) FILTER (WHERE last_seen_at > ${connectedSince(ctx).toISOString()}::timestamptz) AS connected, max(last_seen_at) AS last_seen,
      (SELECT absence_noticed_at IS NOT NULL FROM executor_presence ORDER BY last_seen_at DESC NULLS LAST LIMIT 1) AS noticed
      FROM executor_presence`);
  return { connected: Number(row?.connected ?? 0), lastSeenAt: row?.last_seen ? new Date(row.last_seen) : null, absenceNoticed: row?.noticed === true };
}

/** An executor last seen after this counts as connected. */
export function connectedSince(ctx: Pick<PresenceContext, "clock"> & { config?: Pick<PresenceContext["config"], "executor"> }): Date {
  return new Date(ctx.clock().getTime() - missingAfterMs(ctx.config));
}

/** How often stale rows are deleted, per replica. */
const PRUNE_EVERY_MS = 3_600_000;
/** Rows of executors not seen for this long are deleted, but for the newest: it says when one was last seen. */
const KEEP_MS = 7 * 86_400_000;
const prunedAt = new WeakMap<Database, number>();

/** Deletes the rows of executors long gone (each executor process has an id of its own), at most once an hour per replica. */
export async function pruneExecutorPresence(ctx: PresenceContext): Promise<void> {
  const last = prunedAt.get(ctx.database);
  if (last !== undefined && performance.now() - last < PRUNE_EVERY_MS) return;
  prunedAt.set(ctx.database, performance.now());
  await ctx.database.db.execute(sql`
    DELETE FROM executor_presence
     WHERE (last_seen_at < ${new Date(ctx.clock().getTime() - KEEP_MS).toISOString()}::timestamptz
            AND last_seen_at < (SELECT max(last_seen_at) FROM executor_presence))
        OR (executor = ${NONE_SEEN} AND EXISTS (SELECT 1 FROM executor_presence WHERE last_seen_at IS NOT NULL))`);
}
