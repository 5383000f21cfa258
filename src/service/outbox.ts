import { randomUUID } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import type { ServiceContext } from "./context.ts";
import type { PlanDocument } from "../plan/schema.ts";
import { HOME_EVENTS, HOME_SINK } from "./home-events.ts";
import { laneIsOf, laneOf, priorityOf } from "./outbox-lanes.ts";
import { leaseLanes, markDelivered, markFailed, releaseLane, takeAcrossPlans, takeNext } from "./outbox-lease.ts";

/** A side effect of a plan event, for one sink, written in the transaction that caused it. */
export interface PlanEvent {
  planId: string;
  type: string;
  status: string;
  hash: string;
  at: string;
  /** Who caused it (see audit.ts Actor). */
  actor?: { type: string; userId?: string; via?: string; name?: string; process?: string };
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
 * one place an event's side effects are decided: transition.ts's planEventStatement,
 * store-new-plan.ts and locked-writes.ts (through outboxRowsOfEvents) write exactly what this
 * returns, each in the transaction that caused the event.
 */
export function outboxRowsOf(
  ctx: Pick<ServiceContext, "sinks" | "config">,
  plan: OutboxPlan,
  event: OutboxEvent,
  sinks: readonly string[] = ctx.sinks,
): OutboxRow[] {
  const payload = JSON.stringify({ planId: plan.id, type: event.type, status: event.status, hash: plan.hash, at: event.at, actor: event.actor, data: event.data } satisfies PlanEvent);
  return sinks
    .filter((kind) => (kind !== "webhook" || plan.callbackUrl) && (kind !== HOME_SINK || HOME_EVENTS.has(event.type)))
    .map((kind) => ({ planId: plan.id, kind, lane: laneOf(ctx.config, kind, plan.document as PlanDocument), priority: priorityOf(kind, event.type), payload, at: event.at }));
}

/**
 * The outbox rows of several events of one plan written by one statement (a decision's vote, its
 * approval and hand-off), per event as outboxRowsOf, except that only the last event with a Home
 * row keeps it: a Home delivery rebuilds the tab from the database as it is then, so one row per
 * plan and transaction stands for every change the transaction made.
 */
export function outboxRowsOfEvents(ctx: Pick<ServiceContext, "sinks" | "config">, plan: OutboxPlan, events: readonly OutboxEvent[]): OutboxRow[][] {
  const rows = events.map((event) => outboxRowsOf(ctx, plan, event));
  const last = rows.findLastIndex((r) => r.some((row) => row.kind === HOME_SINK));
  return rows.map((r, i) => (i < last ? r.filter((row) => row.kind !== HOME_SINK) : r));
}

/**
 * The INSERT of outbox rows (outboxRowsOf), for the caller to run in the transaction that caused
 * them; undefined when there are none. Written as SQL rather than through the query builder:
 * drizzle's insert builder took ~0.1 ms of an approval's path per event (2026-12-03).
 */
export function effectsInsert(rows: readonly OutboxRow[]): SQL | undefined {
  if (rows.length === 0) return undefined;
  const values = rows.map((r) => sql`(${r.planId}::uuid, ${r.kind}, ${r.lane}, ${r.priority}::smallint, ${r.payload}, ${r.at}::timestamptz)`);
  return sql`INSERT INTO outbox (plan_id, kind, lane, priority, payload, available_at) VALUES ${sql.join(values, sql`, `)}`;
}

/**
 * What a sink throws to steer redelivery: `permanent` stops retrying at once (the failure is
 * kept, dead-lettered, for people to see); `retryAfterMs` is the least wait the far side asked
 * for (Slack's Retry-After), honoured even when the backoff would be shorter.
 */
export class DeliveryError extends Error {
  readonly permanent: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options: { permanent?: boolean; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "DeliveryError";
    this.permanent = options.permanent ?? false;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * Delivers one outbox row. `many`, where a sink has it, delivers several consecutive queued
 * events of one plan at once, in order (Slack: one thread reply and one update for all of them);
 * without it each row is a call of its own (webhooks: each event is a webhook).
 */
export interface OutboxHandler {
  (payload: PlanEvent, row: { id: number; attempts: number }): Promise<void>;
  many?: (payloads: PlanEvent[], rows: { id: number; attempts: number }[]) => Promise<void>;
  /**
   * The sink rebuilds what it delivers from the database as it is then (App Home), so one `many`
   * call stands for any queued rows of its lane, whatever their plans and order: up to
   * MAX_ACROSS_PLANS are taken together (a burst of plans costs one delivery, not one per plan).
   */
  acrossPlans?: boolean;
}

export interface DeliveryPolicy {
  maxAttempts: number;
  /** How long a worker holds a lane, and a row it is delivering, before another may take it. */
  leaseMs: number;
  /** Delay before attempt n+1 (n ≥ 1). */
  backoffMs: (attempts: number) => number;
}

export const DEFAULT_DELIVERY: DeliveryPolicy = {
  maxAttempts: 12,
  leaseMs: 60_000,
  backoffMs: (n) => Math.min(1000 * 2 ** (n - 1), 5 * 60_000),
};

/** Lanes one replica drains at once: bounds its connections and sockets, whatever the number of channels and agents. */
export const DEFAULT_LANES = 8;
/** At most this many queued transitions of a plan go in one coalesced delivery. */
export const MAX_COALESCED = 10;
/** At most this many rows go in one delivery of a sink that takes rows across plans. */
export const MAX_ACROSS_PLANS = 100;

export interface DeliverDueInput {
  /** Delivery by outbox kind; only lanes of these kinds are leased. */
  handlers: Record<string, OutboxHandler>;
  policy?: DeliveryPolicy;
  /** Deliveries per lane per pass, at most (a coalesced one counts once). */
  batch?: number;
  /** Lanes drained at once, at most. */
  lanes?: number;
  onDead?: (row: { id: number; planId: string | null; kind: string; error: string }) => void;
}

/**
 * One delivery pass: leases up to `lanes` lanes that have rows due and drains them in parallel
 * (drainLane), then returns how many rows were delivered. Several passes, in one process or
 * many, share the work without delivering a row twice: a lane is drained by one at a time.
 */
export async function deliverDue(ctx: Pick<ServiceContext, "database" | "clock">, input: DeliverDueInput): Promise<number> {
  const { handlers, policy = DEFAULT_DELIVERY, lanes = DEFAULT_LANES } = input;
  const token = randomUUID();
  const leased = await leaseLanes(ctx.database, { kinds: Object.keys(handlers), at: ctx.clock(), leaseMs: policy.leaseMs, max: lanes, token });
  const counts = await Promise.all(leased.map((lane) => drainLane(ctx, { ...input, lane, token })));
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * Delivers a leased lane's rows in lane order until nothing more is due, `batch` deliveries were
 * made, or half the lease is spent, then gives the lane back. A plan's rows go in order: a row
 * waits while an older row of its plan and sink is undelivered (a failed Slack post blocks the
 * update after it instead of being overtaken), other plans in the lane go on. A Retry-After
 * (Slack's 429) holds the whole lane that long: the far side asked the channel to wait. Rows are
 * taken in a short statement and delivered outside any transaction; a worker that dies leaves
 * lane and rows to their leases and they are delivered again: at least once, never lost.
 * Returns how many rows were delivered.
 */
export async function drainLane(
  ctx: Pick<ServiceContext, "database" | "clock">,
  input: DeliverDueInput & { lane: string; token: string },
): Promise<number> {
  const { database, clock: now } = ctx;
  const { handlers, lane, token, policy = DEFAULT_DELIVERY, batch = 20, onDead = () => {} } = input;
  const started = performance.now();
  let delivered = 0;
  let holdUntil: Date | undefined;
  try {
    for (let i = 0; i < batch && performance.now() - started < policy.leaseMs / 2; i++) {
      const kind = Object.keys(handlers).find((k) => laneIsOf(lane, k));
      const handler = kind === undefined ? undefined : handlers[kind];
      if (!handler) break;
      const rows = handler.many && handler.acrossPlans
        ? await takeAcrossPlans(database, { lane, at: now(), leaseMs: policy.leaseMs, max: MAX_ACROSS_PLANS })
        : await takeNext(database, { lane, at: now(), leaseMs: policy.leaseMs, coalesce: handler.many ? MAX_COALESCED : 1 });
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.id);
      const head = rows[0]!;
      try {
        const payloads = rows.map((r) => JSON.parse(r.payload) as PlanEvent);
        const seen = rows.map((r) => ({ id: r.id, attempts: r.attempts }));
        if (rows.length > 1 && handler.many) await handler.many(payloads, seen);
        else await handler(payloads[0]!, seen[0]!);
        await markDelivered(database, ids, now());
        delivered += rows.length;
      } catch (err) {
        // A coalesced delivery succeeds or fails as one: its rows share the head's fate.
        const message = err instanceof Error ? err.message : String(err);
        const steer = err instanceof DeliveryError ? err : undefined;
        const at = now();
        if (steer?.permanent || head.attempts >= policy.maxAttempts) {
          await markFailed(database, ids, { at, error: message, retryAt: undefined });
          for (const r of rows) onDead({ id: r.id, planId: r.planId, kind: r.kind, error: message });
        } else {
          const retryAt = new Date(at.getTime() + Math.max(policy.backoffMs(head.attempts), steer?.retryAfterMs ?? 0));
          await markFailed(database, ids, { at, error: message, retryAt });
        }
        if (steer?.retryAfterMs !== undefined) {
          holdUntil = new Date(at.getTime() + steer.retryAfterMs);
          break;
        }
      }
    }
  } finally {
    await releaseLane(database, { lane, token, at: now(), holdUntil });
  }
  return delivered;
}
