import { sql } from "drizzle-orm";
import type { Database } from "../../store/db.ts";
import { DELIVERED_ALONE, laneIsOf } from "../records/outbox-lanes.ts";

/**
 * The SQL of outbox lanes (docs: outbox-lanes.ts). A worker takes whole lanes, never single rows
 * of a lane another worker drains: a lane's order (previews first, each plan in order) and its
 * pacing are then one worker's business. A lane is taken by its outbox_lanes row: leased_by is
 * the taker's token, leased_until when others may take it (a worker that dies leaves it to run
 * out), or "retry-after" while it waits one out. Rows being delivered also carry a lease of
 * their own (available_at pushed ahead), so a worker slower than its lane lease still never
 * shares a row. Raw SQL passes timestamps as ISO strings: drizzle's postgres.js driver does not
 * convert Dates in `sql` templates.
 */

/** An outbox row as a lane hands it out. */
export interface LaneRow {
  id: number;
  planId: string | null;
  kind: string;
  payload: string;
  attempts: number;
}

const UNDELIVERED = sql`delivered_at IS NULL AND dead_at IS NULL`;

/** Lanes created in this process already (their outbox_lanes row exists), per database. */
const knownLanes = new WeakMap<Database, Set<string>>();

/**
 * Leases up to `max` lanes of these sinks that have a row due and nobody holding them, longest
 * idle first. Lanes with work are found by a skip scan of outbox_lane_order (one index probe
 * per lane, whatever the backlog), so this costs the same at 1 M delivered plans as at none.
 */
export async function leaseLanes(
  database: Database,
  input: { kinds: readonly string[]; at: Date; leaseMs: number; max: number; token: string },
): Promise<string[]> {
  const { kinds, at, leaseMs, max, token } = input;
  if (kinds.length === 0 || max <= 0) return [];
  const withWork = (
    await database.rows<{ lane: string }>(sql`
    WITH RECURSIVE lanes(lane) AS (
      (SELECT lane FROM outbox WHERE ${UNDELIVERED} ORDER BY lane LIMIT 1)
      UNION ALL
      SELECT (SELECT o.lane FROM outbox o WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.lane > lanes.lane ORDER BY o.lane LIMIT 1)
      FROM lanes WHERE lanes.lane IS NOT NULL)
    SELECT lane FROM lanes WHERE lane IS NOT NULL`)
  )
    .map((r) => r.lane)
    .filter((lane) => kinds.some((kind) => laneIsOf(lane, kind)));
  if (withWork.length === 0) return [];
  await ensureLaneRows(database, withWork);
  const lanes = sql`ARRAY[${sql.join(
    withWork.map((l) => sql`${l}`),
    sql`, `,
  )}]::text[]`;
  const now = at.toISOString();
  const leased = await database.rows<{ lane: string }>(sql`
    UPDATE outbox_lanes l SET leased_by = ${token}, leased_until = ${new Date(at.getTime() + leaseMs).toISOString()}
    WHERE l.lane IN (
      SELECT c.lane FROM outbox_lanes c
      WHERE c.lane = ANY (${lanes}) AND (c.leased_by IS NULL OR c.leased_until <= ${now})
        AND EXISTS (SELECT 1 FROM outbox o WHERE o.lane = c.lane AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= ${now})
      ORDER BY c.leased_until
      LIMIT ${max}
      FOR UPDATE SKIP LOCKED)
    RETURNING l.lane`);
  return leased.map((r) => r.lane);
}

async function ensureLaneRows(database: Database, lanes: string[]): Promise<void> {
  let known = knownLanes.get(database);
  if (!known) knownLanes.set(database, (known = new Set()));
  const fresh = lanes.filter((l) => !known.has(l));
  if (fresh.length === 0) return;
  await database.rows(sql`
    INSERT INTO outbox_lanes (lane, leased_until)
    SELECT unnest(ARRAY[${sql.join(
      fresh.map((l) => sql`${l}`),
      sql`, `,
    )}]::text[]), '-infinity'
    ON CONFLICT (lane) DO NOTHING`);
  for (const l of fresh) known.add(l);
}

/** leased_by of a lane nobody drains that waits out a Retry-After until leased_until. */
export const HELD = "retry-after";

/**
 * Gives a lane back. Free at once (leased_by NULL; leased_until, the release time, only orders
 * free lanes longest idle first), so a clock that steps back cannot strand it; or, after a
 * Retry-After, held until `holdUntil`. Only the holder's token gives it back: a lease that ran out
 * and was taken by another stays theirs.
 */
export async function releaseLane(database: Database, input: { lane: string; token: string; at: Date; holdUntil?: Date | undefined }): Promise<void> {
  const { lane, token, at, holdUntil } = input;
  await database.rows(sql`
    UPDATE outbox_lanes SET leased_by = ${holdUntil ? HELD : null}, leased_until = ${(holdUntil ?? at).toISOString()}
    WHERE lane = ${lane} AND leased_by = ${token}`);
}

/**
 * Takes the lane's next delivery: its first due row in lane order (previews first, then oldest)
 * whose plan has no earlier undelivered row of the same sink, and, when `coalesce` is more than
 * one and that row is not one delivered alone (DELIVERED_ALONE), the same plan's next due rows
 * of the sink up to the first one delivered alone (consecutive transitions still queued), up to
 * `coalesce` rows in all. Each row's attempts count up and its own lease starts. Empty when
 * nothing in the lane can go now.
 * Both probes are shaped so that they look up the head's plan in outbox_undelivered_plan_kind
 * whatever the statistics say: on a database not yet analyzed (a fresh one taking a burst, as the
 * intake bench's) PostgreSQL ran the earlier-row check as an anti-join over every undelivered row
 * and the followers as a scan of them all joined to the head, 11–16 ms a delivery with 5 000 rows
 * queued. The OFFSET 0 keeps the EXISTS a per-row lookup (it is not turned into a join), its ORDER
 * BY is that index's order; the followers are a LATERAL lookup of the head's plan.
 */
export async function takeNext(database: Database, input: { lane: string; at: Date; leaseMs: number; coalesce: number }): Promise<LaneRow[]> {
  const { lane, at, leaseMs, coalesce } = input;
  const now = at.toISOString();
  const alone = sql.join(
    DELIVERED_ALONE.map((t) => sql`${t}`),
    sql`, `,
  );
  const rows = await database.rows<{ id: number | string; plan_id: string | null; kind: string; payload: string; attempts: number }>(sql`
    WITH head AS (
      SELECT o.id, o.plan_id, o.kind, (o.payload::json->>'type') IN (${alone}) AS alone FROM outbox o
      WHERE o.lane = ${lane} AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= ${now}
        AND NOT EXISTS (
          SELECT 1 FROM outbox earlier
          WHERE earlier.plan_id = o.plan_id AND earlier.kind = o.kind AND earlier.id < o.id
            AND earlier.delivered_at IS NULL AND earlier.dead_at IS NULL
          ORDER BY earlier.plan_id, earlier.kind, earlier.id OFFSET 0)
      ORDER BY o.lane, o.priority, o.id
      LIMIT 1),
    followers AS (
      SELECT f.id, f.alone FROM head, LATERAL (
        SELECT f.id, (f.payload::json->>'type') IN (${alone}) AS alone FROM outbox f
        WHERE f.plan_id = head.plan_id AND f.kind = head.kind AND f.id > head.id
          AND f.delivered_at IS NULL AND f.dead_at IS NULL AND f.available_at <= ${now}
        ORDER BY f.id
        LIMIT ${Math.max(coalesce - 1, 0)}) f
      WHERE ${coalesce} > 1 AND NOT head.alone),
    taken AS (
      SELECT id FROM head
      UNION ALL
      -- Consecutive only: up to the first follower that goes alone.
      SELECT id FROM followers WHERE id < coalesce((SELECT min(id) FROM followers WHERE alone), ${Number.MAX_SAFE_INTEGER}))
    UPDATE outbox SET available_at = ${new Date(at.getTime() + leaseMs).toISOString()}, attempts = attempts + 1
    WHERE id IN (SELECT id FROM taken)
    RETURNING id, plan_id, kind, payload, attempts`);
  // postgres.js returns bigint columns as strings in raw queries; PGlite as numbers.
  return rows.map((r) => ({ id: Number(r.id), planId: r.plan_id, kind: r.kind, payload: r.payload, attempts: r.attempts })).sort((a, b) => a.id - b.id);
}

/**
 * Takes a lane's first `max` due rows in lane order, of any plans, with no plan-order probe: for a
 * sink whose delivery is rebuilt from the database as it is when delivered (App Home), where one
 * delivery stands for every row it takes and a plan's rows may go in any order. Each row's attempts
 * count up and its own lease starts, as takeNext's. Only rows never tried go together: a row that
 * failed before is taken alone when its turn comes, so a delivery that keeps failing for one plan
 * (a group Slack cannot resolve) backs off and is dead-lettered by its own attempts, never taking
 * up to `max` other plans' rows with it.
 */
export async function takeAcrossPlans(database: Database, input: { lane: string; at: Date; leaseMs: number; max: number }): Promise<LaneRow[]> {
  const { lane, at, leaseMs, max } = input;
  const rows = await database.rows<{ id: number | string; plan_id: string | null; kind: string; payload: string; attempts: number }>(sql`
    WITH due AS (
      SELECT o.id, o.attempts, row_number() OVER (ORDER BY o.lane, o.priority, o.id) AS n FROM outbox o
      WHERE o.lane = ${lane} AND o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= ${at.toISOString()}
      ORDER BY o.lane, o.priority, o.id
      LIMIT ${max})
    UPDATE outbox SET available_at = ${new Date(at.getTime() + leaseMs).toISOString()}, attempts = attempts + 1
    WHERE id IN (SELECT id FROM due WHERE CASE WHEN (SELECT attempts FROM due WHERE n = 1) > 0 THEN n = 1 ELSE attempts = 0 END)
    RETURNING id, plan_id, kind, payload, attempts`);
  return rows.map((r) => ({ id: Number(r.id), planId: r.plan_id, kind: r.kind, payload: r.payload, attempts: r.attempts })).sort((a, b) => a.id - b.id);
}

/** Marks rows delivered, all in one statement (a coalesced delivery's rows together). */
export async function markDelivered(database: Database, ids: readonly number[], at: Date): Promise<void> {
  await database.rows(
    sql`UPDATE outbox SET delivered_at = ${at.toISOString()}, last_error = NULL WHERE id IN (${sql.join(
      ids.map((id) => sql`${id}`),
      sql`, `,
    )})`,
  );
}

/** Records a failed delivery of rows: retried from `retryAt`, or dead-lettered when `retryAt` is undefined. */
export async function markFailed(database: Database, ids: readonly number[], input: { at: Date; error: string; retryAt: Date | undefined }): Promise<void> {
  const list = sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
  if (input.retryAt)
    await database.rows(sql`UPDATE outbox SET available_at = ${input.retryAt.toISOString()}, last_error = ${input.error} WHERE id IN (${list})`);
  else await database.rows(sql`UPDATE outbox SET dead_at = ${input.at.toISOString()}, last_error = ${input.error} WHERE id IN (${list})`);
}
