import { sql } from "drizzle-orm";
import { outbox } from "../store/schema.ts";
import type { Database, Tx } from "../store/db.ts";
import type { ServiceContext } from "./context.ts";

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

/**
 * The INSERT of an event's outbox rows, one per sink, for the caller to run in the transaction
 * that caused it (recordPlanEvent runs it in one statement with the audit event); undefined when
 * there is no sink.
 */
export function effectsInsert(tx: Tx, sinks: readonly string[], event: PlanEvent) {
  if (sinks.length === 0) return undefined;
  return tx.insert(outbox).values(sinks.map((kind) => ({ planId: event.planId, kind, payload: event, availableAt: new Date(event.at) })));
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

export type OutboxHandler = (payload: PlanEvent, row: { id: number; attempts: number }) => Promise<void>;

export interface DeliveryPolicy {
  maxAttempts: number;
  /** How long a worker holds a row it is delivering before another may take it. */
  leaseMs: number;
  /** Delay before attempt n+1 (n ≥ 1). */
  backoffMs: (attempts: number) => number;
}

export const DEFAULT_DELIVERY: DeliveryPolicy = {
  maxAttempts: 12,
  leaseMs: 60_000,
  backoffMs: (n) => Math.min(1000 * 2 ** (n - 1), 5 * 60_000),
};

/** Raw SQL here passes timestamps as ISO strings: drizzle's postgres.js driver does not convert Dates in `sql` templates. */
interface DueRow {
  id: number;
  plan_id: string | null;
  kind: string;
  payload: string;
  attempts: number;
}

export interface DeliverDueInput {
  /** Delivery by outbox kind; only these kinds are leased. */
  handlers: Record<string, OutboxHandler>;
  policy?: DeliveryPolicy;
  batch?: number;
  onDead?: (row: { id: number; planId: string | null; kind: string; error: string }) => void;
}

/**
 * Delivers what is due, oldest first, keeping each plan's effects in order: a row waits while
 * an older row of the same plan and sink is undelivered (so a failed Slack post blocks the
 * update after it instead of being overtaken by it). A row is leased in a short transaction
 * and delivered outside it (no network I/O while holding locks); a worker that dies mid-way
 * leaves the lease to run out and the row is delivered again: at least once, never lost.
 * Returns how many rows were delivered.
 */
export async function deliverDue(ctx: Pick<ServiceContext, "database" | "clock">, input: DeliverDueInput): Promise<number> {
  const { database, clock: now } = ctx;
  const { handlers, policy = DEFAULT_DELIVERY, batch = 20, onDead = () => {} } = input;
  const kinds = Object.keys(handlers);
  if (kinds.length === 0) return 0;
  let delivered = 0;
  for (let i = 0; i < batch; i++) {
    const row = await leaseNext(database, kinds, now(), policy.leaseMs);
    if (!row) break;
    try {
      await handlers[row.kind]!(JSON.parse(row.payload) as PlanEvent, { id: row.id, attempts: row.attempts });
      await database.db.execute(sql`UPDATE ${outbox} SET delivered_at = ${now().toISOString()}, last_error = NULL WHERE id = ${row.id}`);
      delivered++;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const steer = err instanceof DeliveryError ? err : undefined;
      if (steer?.permanent || row.attempts >= policy.maxAttempts) {
        await database.db.execute(sql`UPDATE ${outbox} SET dead_at = ${now().toISOString()}, last_error = ${message} WHERE id = ${row.id}`);
        onDead({ id: row.id, planId: row.plan_id, kind: row.kind, error: message });
      } else {
        const retryAt = new Date(now().getTime() + Math.max(policy.backoffMs(row.attempts), steer?.retryAfterMs ?? 0));
        await database.db.execute(sql`UPDATE ${outbox} SET available_at = ${retryAt.toISOString()}, last_error = ${message} WHERE id = ${row.id}`);
      }
    }
  }
  return delivered;
}

async function leaseNext(database: Database, kinds: string[], at: Date, leaseMs: number): Promise<DueRow | undefined> {
  const [row] = await database.rows<DueRow>(sql`
    UPDATE ${outbox} SET available_at = ${new Date(at.getTime() + leaseMs).toISOString()}, attempts = attempts + 1
    WHERE id = (
      SELECT o.id FROM ${outbox} o
      WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.available_at <= ${at.toISOString()}
        AND o.kind IN (${sql.join(kinds.map((k) => sql`${k}`), sql`, `)})
        AND NOT EXISTS (
          SELECT 1 FROM ${outbox} earlier
          WHERE earlier.plan_id = o.plan_id AND earlier.kind = o.kind AND earlier.id < o.id
            AND earlier.delivered_at IS NULL AND earlier.dead_at IS NULL)
      ORDER BY o.id
      LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING id, plan_id, kind, payload, attempts`);
  // postgres.js returns bigint columns as strings in raw queries; PGlite as numbers.
  return row && { ...row, id: Number(row.id) };
}
