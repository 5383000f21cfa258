import type { PlanEvent } from "../records/outbox.ts";

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
