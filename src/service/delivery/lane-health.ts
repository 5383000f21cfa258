import { sql } from "drizzle-orm";
import type { ServiceContext } from "../context.ts";
import { HELD } from "./outbox-lease.ts";

/**
 * How one outbox lane (outbox-lanes.ts) is doing: what waits in it, for how long, what gave up,
 * and who drains or holds it. The visibility page and the metrics read these same numbers.
 */
export interface LaneHealth {
  /** `slack:<channel>`, `webhook:<agent>`, or a sink's kind. */
  lane: string;
  /** Rows still to deliver (neither delivered nor dead). */
  backlog: number;
  /** Seconds since the event of the lane's oldest undelivered row happened; 0 with no backlog. */
  oldestUndeliveredSeconds: number;
  /** Rows dead-lettered (given up on) in this lane, until someone retries them. */
  dead: number;
  /** Until when the lane waits out a Slack Retry-After (429), if it does now. */
  heldUntil: Date | undefined;
  /** The worker lease draining the lane now (its token, and when others may take over). */
  drainedBy: { token: string; until: Date } | undefined;
}

/**
 * Every lane with rows to deliver, dead rows, or a lease row (a lane drained at some point), in
 * lane order. Costs one pass over the undelivered rows' partial index (outbox_lane_order, which
 * holds lane and id, so no table row is read for the counts), one over the dead rows' partial
 * index (outbox_dead_plan), and one row per lane for its oldest event's time: delivered history
 * is never read, however long it grows.
 */
export async function laneHealth(ctx: Pick<ServiceContext, "database" | "clock">): Promise<LaneHealth[]> {
  const now = ctx.clock();
  const rows = await ctx.database.rows<{
    lane: string;
    backlog: number | string;
    oldest_at: string | null;
    dead: number | string;
    leased_by: string | null;
    leased_until: string | Date | null;
  }>(sql`
    WITH work AS (
      SELECT lane, count(*) AS backlog, min(id) AS oldest_id FROM outbox
      WHERE delivered_at IS NULL AND dead_at IS NULL GROUP BY lane),
    dead AS (
      SELECT lane, count(*) AS dead FROM outbox WHERE dead_at IS NOT NULL GROUP BY lane),
    named AS (
      SELECT lane FROM work UNION SELECT lane FROM dead UNION SELECT lane FROM outbox_lanes)
    SELECT n.lane, coalesce(w.backlog, 0) AS backlog, o.payload::json->>'at' AS oldest_at,
      coalesce(d.dead, 0) AS dead, l.leased_by, l.leased_until
    FROM named n
    LEFT JOIN work w ON w.lane = n.lane
    LEFT JOIN dead d ON d.lane = n.lane
    LEFT JOIN outbox o ON o.id = w.oldest_id
    LEFT JOIN outbox_lanes l ON l.lane = n.lane
    ORDER BY n.lane`);
  return rows.map((r) => {
    const until = r.leased_until === null ? undefined : new Date(r.leased_until);
    // A lease or hold whose time has passed binds nobody any more (the next worker takes the lane).
    const current = until !== undefined && until > now && r.leased_by !== null;
    return {
      lane: r.lane,
      backlog: Number(r.backlog),
      oldestUndeliveredSeconds: r.oldest_at === null ? 0 : Math.max(0, Math.round((now.getTime() - Date.parse(r.oldest_at)) / 1000)),
      dead: Number(r.dead),
      heldUntil: current && r.leased_by === HELD ? until : undefined,
      drainedBy: current && r.leased_by !== HELD ? { token: r.leased_by!, until: until! } : undefined,
    };
  });
}
