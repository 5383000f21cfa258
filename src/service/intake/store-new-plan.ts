import type { Database } from "../../store/db.ts";
import type { AdmitGuard } from "../agents/agent-limits.ts";
import { auditChainHash, auditContentDigest, planGenesis } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { outboxRowsOf } from "../records/outbox.ts";
import { announcementPayload, PLAN_CHANNEL } from "../records/plan-signals.ts";
import type { PlanRow } from "../lifecycle/transition.ts";

/**
 * A new plan as the hot path stores it: no idempotency key and nothing superseded (those keep
 * their transaction); updated when created.
 */
export type NewPlan = Pick<PlanRow, "id" | "hash" | "document" | "preview" | "expiresAt" | "requestDigest" | "callbackUrl" | "createdAt">;

/** Parameters of the plan's INSERT: its columns and the guard's arguments. */
const PLAN_PARAMS = 14;
const EVENT_COLUMNS = 6;
const OUTBOX_COLUMNS = 5;

/**
 * The statement's text, by how many outbox rows it writes: made once, so storing a plan builds no
 * SQL (drizzle building this statement, a 22-column insert, the audit append and the outbox rows,
 * took 0.2–0.8 ms of the server's CPU per plan). A new plan's chain has no events yet, so its
 * first event's predecessor is the plan's genesis and its hash is computed here, exactly as
 * audit.ts's auditInsert would compute it in SQL after reading an empty tail.
 */
const texts = new Map<number, string>();
function textFor(outboxRows: number): string {
  let text = texts.get(outboxRows);
  if (text) return text;
  const p = (i: number) => `$${i}`;
  const planValues = `${p(1)}::uuid, countersign_admit_plan(${p(2)}::uuid, ${p(3)}::timestamptz, ${p(4)}::int, ${p(5)}::int, ${p(13)}::int, ${p(14)}::int), ${p(6)}, ${p(7)}, ${p(8)}, 'pending', ${p(9)}::timestamptz, ${p(10)}, ${p(11)}, 0, ${p(12)}::timestamptz, ${p(12)}::timestamptz`;
  const e = PLAN_PARAMS + 1;
  const eventValues = `${p(1)}::uuid, ${p(e)}, ${p(e + 1)}, ${p(e + 2)}, ${p(e + 3)}::timestamptz, ${p(e + 4)}, ${p(e + 5)}`;
  const o = e + EVENT_COLUMNS;
  const outboxValues = Array.from({ length: outboxRows }, (_, r) => {
    const at = o + r * OUTBOX_COLUMNS;
    return `(${p(1)}::uuid, ${p(at)}, ${p(at + 1)}, ${p(at + 2)}::smallint, ${p(at + 3)}, ${p(at + 4)}::timestamptz)`;
  });
  text = `WITH first AS (INSERT INTO plans (id, agent_id, hash, document, preview, status, expires_at, request_digest, callback_url, claims, created_at, updated_at) VALUES (${planValues})),
 audit AS (INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash) VALUES (${eventValues}))${
   outboxRows > 0 ? `,\n effects AS (INSERT INTO outbox (plan_id, kind, lane, priority, payload, available_at) VALUES ${outboxValues.join(", ")})` : ""
 }
 SELECT 1`;
  texts.set(outboxRows, text);
  return text;
}

/**
 * Stores a new plan, pending, with its `plan.submitted` event (audit row, outbox rows) in one
 * statement, a transaction of its own: what transition.ts's planEventStatement writes for it, with
 * the plan's INSERT first (`first`) and the admission guard in its VALUES, except the wake-up,
 * which is sent after the commit, coalesced with other new plans' (announceNewPlan).
 */
export async function storeNewPlan(
  ctx: Pick<ServiceContext, "database" | "sinks" | "config">,
  input: { plan: NewPlan; guard: AdmitGuard; event: { type: string; actor: Actor; at: Date; data: Record<string, unknown> } },
): Promise<void> {
  const { plan, guard, event } = input;
  const content = auditContentDigest({ planId: plan.id, ...event });
  const prevHash = planGenesis(plan.id);
  const at = event.at.toISOString();
  const effects = outboxRowsOf(ctx, plan, { type: event.type, status: "pending", at, actor: event.actor, data: event.data });
  const params: (string | number | null)[] = [
    plan.id,
    guard.agentId,
    guard.since.toISOString(),
    guard.plansPerMinute,
    guard.maxPending,
    plan.hash,
    JSON.stringify(plan.document),
    JSON.stringify(plan.preview),
    plan.expiresAt.toISOString(),
    plan.requestDigest,
    plan.callbackUrl,
    plan.createdAt.toISOString(),
    guard.seen.recent,
    guard.seen.open,
    event.type,
    JSON.stringify(event.actor),
    JSON.stringify(event.data),
    at,
    prevHash,
    auditChainHash(prevHash, content),
  ];
  for (const row of effects) params.push(row.kind, row.lane, row.priority, row.payload, row.at);
  await ctx.database.query(textFor(effects.length), params);
  announceNewPlan(ctx.database, plan.id);
}

/**
 * New plans are announced after their commit, coalesced: at most one NOTIFY per ANNOUNCE_MS per
 * database, naming the newest. A NOTIFY inside a transaction serializes its commit with every
 * other notifying commit on the server (PostgreSQL holds one lock on the notification queue from
 * before the commit to its end, the WAL flush included): 8 clients inserting a row each committed
 * 755–792 times/s, and 218–270 with a NOTIFY in each (PostgreSQL 15, load 11). Nobody waits on a
 * plan's id before the submit answers with it; what hears of a new plan is a list page (waitAny),
 * woken ANNOUNCE_MS later at most, or at its 15 s re-check if the announcement is lost (the
 * process ended first, the database went away): the list is re-read either way, never stale.
 */
const ANNOUNCE_MS = 50;
const announcing = new WeakMap<Database, { newest: string }>();

function announceNewPlan(database: Database, planId: string): void {
  const due = announcing.get(database);
  if (due) {
    due.newest = planId;
    return;
  }
  const entry = { newest: planId };
  announcing.set(database, entry);
  setTimeout(() => {
    announcing.delete(database);
    // A lost announcement costs a list page seconds (see above), so failing to send it is not an error.
    database.notify(PLAN_CHANNEL, announcementPayload(entry.newest, "pending")).catch(() => undefined);
  }, ANNOUNCE_MS).unref();
}
