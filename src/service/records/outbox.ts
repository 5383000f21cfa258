import { sql, type SQL } from "drizzle-orm";
import type { ServiceContext } from "../context.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import { HOME_EVENTS, HOME_SINK } from "./home-events.ts";
import { laneOf, priorityOf } from "./outbox-lanes.ts";

/** A side effect of a plan event, for one sink, written in the transaction that caused it. */
export interface PlanEvent {
  planId: string;
  type: string;
  status: string;
  hash: string;
  at: string;
  /** Who caused it (see audit.ts Actor). */
  actor?: { type: string; userId?: string; via?: string; name?: string; process?: string; for?: string };
  data?: Record<string, unknown>;
}

/** An outbox row of a plan event, as every statement that writes one writes it. */
export interface OutboxRow {
  planId: string;
  kind: string;
  lane: string;
  priority: number;
  /** The event (PlanEvent) as JSON: the same text for every sink, serialized once. */
  payload: string;
  /** When it may first be delivered: the event's time. */
  at: string;
}

type OutboxPlan = { id: string; hash: string; callbackUrl: string | null; document: unknown };
type OutboxEvent = Omit<PlanEvent, "planId" | "hash">;

/**
 * A plan event's outbox rows, one per sink (`sinks`, by default every configured one) that takes
 * it: webhooks only where the agent asked for them, the App Home only for events that change
 * what a Home shows (HOME_EVENTS). Each names its lane (outbox-lanes.ts) and its order in it. The
 * one place an event's side effects are decided: transition.ts's planEventStatement and
 * store-new-plan.ts write exactly what this returns, each in the transaction that caused the event.
 */
export function outboxRowsOf(
  ctx: Pick<ServiceContext, "sinks" | "config">,
  plan: OutboxPlan,
  event: OutboxEvent,
  sinks: readonly string[] = ctx.sinks,
): OutboxRow[] {
  const payload = JSON.stringify({
    planId: plan.id,
    type: event.type,
    status: event.status,
    hash: plan.hash,
    at: event.at,
    actor: event.actor,
    data: event.data,
  } satisfies PlanEvent);
  return sinks
    .filter((kind) => (kind !== "webhook" || plan.callbackUrl) && (kind !== HOME_SINK || HOME_EVENTS.has(event.type)))
    .map((kind) => ({
      planId: plan.id,
      kind,
      lane: laneOf(ctx.config, kind, plan.document as PlanDocument),
      priority: priorityOf(kind, event.type),
      payload,
      at: event.at,
    }));
}

/**
 * The INSERT of outbox rows (outboxRowsOf), for the caller to run in the transaction that caused
 * them; undefined when there are none. Written as SQL rather than through the query builder:
 * drizzle's insert builder costs ~0.1 ms of an approval's path per event.
 */
export function effectsInsert(rows: readonly OutboxRow[]): SQL | undefined {
  if (rows.length === 0) return undefined;
  const values = rows.map((r) => sql`(${r.planId}::uuid, ${r.kind}, ${r.lane}, ${r.priority}::smallint, ${r.payload}, ${r.at}::timestamptz)`);
  return sql`INSERT INTO outbox (plan_id, kind, lane, priority, payload, available_at) VALUES ${sql.join(values, sql`, `)}`;
}
