import { sql } from "drizzle-orm";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { laneHealth, type LaneHealth } from "./lane-health.ts";
import { rightsOf, type Reader } from "../access/reader-rights.ts";

/** A delivery the outbox gave up on (a permanent refusal, or too many attempts), as people see it. */
export interface DeadDelivery {
  /** The outbox row; what a retry names. */
  id: number;
  lane: string;
  kind: string;
  /** The plan event it carried (`plan.approved` …). */
  event: string | undefined;
  plan: { id: string; title: string | undefined } | undefined;
  attempts: number;
  lastError: string | undefined;
  deadAt: Date;
}

export interface OutboxVisibility {
  lanes: LaneHealth[];
  /** The newest dead deliveries, at most `limit`; each lane's `dead` counts them all. */
  dead: DeadDelivery[];
  /** Whether this person may retry a dead delivery (the top-level `admins`). */
  mayRetry: boolean;
}

/** Dead deliveries shown at once, newest first: a page to act on, not an archive. */
export const DEAD_SHOWN = 100;

/**
 * The outbox as an operator sees it: every lane's numbers and the newest dead deliveries, for
 * people who read every plan (admins, `browser.readers`, anyone signed in without that list):
 * dead deliveries name plans, so the plan read rule decides who sees them.
 */
export async function outboxVisibility(ctx: ServiceContext, input: { reader: Reader; limit?: number }): Promise<OutboxVisibility> {
  const rights = await rightsOf(ctx, input.reader, []);
  // The one rule: maySeeLanes asks the same question.
  if (!rights.readsEverything) {
    throw new ServiceError(
      "not_a_reader",
      "you may not see the delivery lanes: they name every plan's deliveries, so only admins and the people in browser.readers may",
    );
  }
  const lanes = await laneHealth(ctx);
  const dead = await deadDeliveries(ctx, input.limit ?? DEAD_SHOWN);
  return { lanes, dead, mayRetry: rights.isAdmin };
}

/** Whether this person may see the lanes (outboxVisibility's rule), for doors deciding whether to link them. */
export async function maySeeLanes(ctx: ServiceContext, input: { reader: Reader }): Promise<boolean> {
  return (await rightsOf(ctx, input.reader, [])).readsEverything;
}

/**
 * The newest dead rows, through the dead rows' partial index (outbox_dead_plan): delivered
 * history is never read. Each carries its plan's title, read by primary key.
 */
async function deadDeliveries(ctx: Pick<ServiceContext, "database">, limit: number): Promise<DeadDelivery[]> {
  const rows = await ctx.database.rows<{
    id: number | string;
    lane: string;
    kind: string;
    event: string | null;
    plan_id: string | null;
    title: string | null;
    attempts: number;
    last_error: string | null;
    dead_at: string | Date;
  }>(sql`
    SELECT o.id, o.lane, o.kind, o.payload::json->>'type' AS event, o.plan_id, p.document::json->>'title' AS title,
      o.attempts, o.last_error, o.dead_at
    FROM (SELECT * FROM outbox WHERE dead_at IS NOT NULL ORDER BY id DESC LIMIT ${limit}) o
    LEFT JOIN plans p ON p.id = o.plan_id
    ORDER BY o.id DESC`);
  return rows.map((r) => ({
    id: Number(r.id),
    lane: r.lane,
    kind: r.kind,
    event: r.event ?? undefined,
    plan: r.plan_id === null ? undefined : { id: r.plan_id, title: r.title ?? undefined },
    attempts: r.attempts,
    lastError: r.last_error ?? undefined,
    deadAt: new Date(r.dead_at),
  }));
}
