import { randomUUID } from "node:crypto";
import type { ServiceContext } from "../context.ts";
import type { PlanEvent } from "../records/outbox.ts";
import { leaseLanes, markDelivered, markFailed, releaseLane, takeAcrossPlans, takeNext } from "./outbox-lease.ts";
import { DEFAULT_DELIVERY, DEFAULT_LANES, DeliveryError, MAX_COALESCED, type DeliveryPolicy, type OutboxHandler } from "./sink-contract.ts";
import { laneIsOf } from "../records/outbox-lanes.ts";

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
  /** The server is stopping: a lane takes no more rows after the delivery in hand, and is given back for another replica. */
  signal?: AbortSignal;
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
export async function drainLane(ctx: Pick<ServiceContext, "database" | "clock">, input: DeliverDueInput & { lane: string; token: string }): Promise<number> {
  const { database, clock: now } = ctx;
  const { handlers, lane, token, policy = DEFAULT_DELIVERY, batch = 20, onDead = () => {} } = input;
  const started = performance.now();
  let delivered = 0;
  let holdUntil: Date | undefined;
  try {
    for (let i = 0; i < batch && performance.now() - started < policy.leaseMs / 2 && !input.signal?.aborted; i++) {
      const kind = Object.keys(handlers).find((k) => laneIsOf(lane, k));
      const handler = kind === undefined ? undefined : handlers[kind];
      if (!handler) break;
      const rows =
        handler.many && handler.acrossPlans
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
