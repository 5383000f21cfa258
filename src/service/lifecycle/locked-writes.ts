import type { PlanStatus } from "../../plan/status.ts";
import type { TextStatement } from "../../store/db.ts";
import { auditChainHash, auditContentDigest } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { outboxRowsOfEvents } from "../records/outbox.ts";
import { announcementPayload, PLAN_CHANNEL } from "../records/plan-signals.ts";

/** A person's vote or rejection, as the decisions table keeps it. */
export interface NewDecision {
  planHash: string;
  userId: string;
  via: "slack" | "web";
  verdict: "approve" | "reject";
  reason: string | null;
  recheckFailed: string | null;
  decidedAt: Date;
  expiresAt: Date;
}

/** An event of the plan: its audit row and an outbox row per sink. `status` is the plan's status the event reports. */
export interface LockedEvent {
  type: string;
  status: PlanStatus;
  actor: Actor;
  at: Date;
  data: Record<string, unknown>;
}

/** The columns a decision may set on the plan row besides its status, with their SQL types. */
const SETTABLE = {
  rejectReason: ["reject_reason", "text"],
  grant: ['"grant"', "text"],
  grantExpiresAt: ["grant_expires_at", "timestamptz"],
  claimToken: ["claim_token", "text"],
  leaseExpiresAt: ["lease_expires_at", "timestamptz"],
} as const;
export type LockedSet = { [K in keyof typeof SETTABLE]?: (typeof SETTABLE)[K][1] extends "timestamptz" ? Date : string | null };

/** The plan row's UPDATE (transitionsLocked makes it): from, to, what else it sets, and what a miss says. */
export interface LockedUpdate {
  from: readonly PlanStatus[];
  to: PlanStatus;
  at: Date;
  set: LockedSet;
  /** The claim's count goes up by one (a hand-off is a claim). */
  countsClaim: boolean;
  /** Misses while the kill switch is on: read in this statement, as the executor's claim reads it. */
  unlessPaused: boolean;
  /** The failure's message when the UPDATE does not change exactly one row (isTransitionMissed recognises it). */
  missed: string;
}

export interface LockedWrites {
  decision?: NewDecision | undefined;
  update?: LockedUpdate | undefined;
  /** In the order they happened; chained in this order. */
  events: readonly LockedEvent[];
  /** What the statement announces (PlanSignals): the status the plan is left in, or the one it is handed on as. */
  announce: string;
}

const iso = (d: Date) => d.toISOString();

/**
 * Everything a decision writes under its plan's row lock, as one statement with `$n` parameters,
 * the last before the COMMIT (Database.transactionEndingWith): the decision row, the plan row's
 * guarded UPDATE, each event's audit row and outbox rows (outboxRowsOfEvents), and one
 * announcement. Only constants are written into
 * the text (statuses from TRANSITIONS, columns from SETTABLE); every value is a parameter.
 *
 * The events chain from `tail`, the plan chain's newest hash, which the caller read under the row
 * lock in a statement of its own (audit.ts planChainTail): their hashes are computed here, as
 * store-new-plan.ts computes a new plan's first. A fork still cannot pass unnoticed: two events
 * with one predecessor break audit_events_one_successor. An UPDATE that does not change exactly
 * one row fails the statement (the CASE is evaluated from the row count, never folded when
 * planned), and the whole transaction rolls back. Rows of a multi-row VALUES are inserted in
 * order, so ids, and with them the chain's and each lane's order, follow `events`. The single
 * announcement names the status the plan is left in: executors are woken by `approved`, as they
 * were by the last of the events' own announcements before.
 */
export function lockedWritesStatement(
  ctx: Pick<ServiceContext, "sinks" | "config">,
  plan: { id: string; hash: string; callbackUrl: string | null; document: unknown; tail: string },
  writes: LockedWrites,
): TextStatement {
  const params: (string | number | null)[] = [];
  const p = (value: string | number | null, cast = "") => `$${params.push(value)}${cast}`;
  const id = p(plan.id, "::uuid");
  const ctes: string[] = [];
  const { decision: d, update: u } = writes;
  if (d) {
    ctes.push(`decision AS (INSERT INTO decisions (plan_id, plan_hash, user_id, via, verdict, reason, recheck_failed, decided_at, expires_at)
   VALUES (${id}, ${p(d.planHash)}, ${p(d.userId)}, ${p(d.via)}::decision_via, ${p(d.verdict)}::verdict, ${p(d.reason)}, ${p(d.recheckFailed)}, ${p(iso(d.decidedAt), "::timestamptz")}, ${p(iso(d.expiresAt), "::timestamptz")}))`);
  }
  if (u) {
    const sets = [`status = '${u.to}'`, `updated_at = ${p(iso(u.at), "::timestamptz")}`];
    for (const [key, value] of Object.entries(u.set) as [keyof typeof SETTABLE, Date | string | null | undefined][]) {
      if (value === undefined) continue;
      const [column, type] = SETTABLE[key];
      sets.push(`${column} = ${p(value instanceof Date ? iso(value) : value, `::${type}`)}`);
    }
    if (u.countsClaim) sets.push("claims = claims + 1");
    // Statuses come from the lifecycle's TRANSITIONS only; written in, as plan-status-sql.ts writes them.
    const where = [`id = ${id}`, `status IN (${u.from.map((s) => `'${s}'`).join(", ")})`, ...(u.unlessPaused ? ["NOT EXISTS (SELECT 1 FROM pause)"] : [])];
    ctes.push(`updated AS (UPDATE plans SET ${sets.join(", ")} WHERE ${where.join(" AND ")} RETURNING id)`);
  }
  if (writes.events.length === 0) throw new Error("lockedWritesStatement: a decision records at least one event");
  let prev = plan.tail;
  const audits = writes.events.map((e) => {
    const hash = auditChainHash(prev, auditContentDigest({ planId: plan.id, type: e.type, actor: e.actor, data: e.data, at: e.at }));
    const row = `(${id}, ${p(e.type)}, ${p(JSON.stringify(e.actor))}, ${p(JSON.stringify(e.data))}, ${p(iso(e.at), "::timestamptz")}, ${p(prev)}, ${p(hash)})`;
    prev = hash;
    return row;
  });
  ctes.push(`audit AS (INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash) VALUES ${audits.join(", ")})`);
  const effects = outboxRowsOfEvents(
    ctx,
    plan,
    writes.events.map((e) => ({ type: e.type, status: e.status, at: iso(e.at), actor: e.actor, data: e.data })),
  ).flatMap((rows) => {
    // The payload and time are one parameter for all of an event's rows.
    const payload = rows[0] && p(rows[0].payload);
    const available = rows[0] && p(rows[0].at, "::timestamptz");
    return rows.map((r) => `(${id}, ${p(r.kind)}, ${p(r.lane)}, ${p(r.priority, "::smallint")}, ${payload}, ${available})`);
  });
  if (effects.length > 0) ctes.push(`effects AS (INSERT INTO outbox (plan_id, kind, lane, priority, payload, available_at) VALUES ${effects.join(", ")})`);
  const announce = `pg_notify(${p(PLAN_CHANNEL)}, ${p(announcementPayload(plan.id, writes.announce))})`;
  const select = u
    ? `SELECT (CASE WHEN n = 1 THEN '1' ELSE ${p(u.missed)}::text || ' (' || n || ' rows)' END)::int AS ok, ${announce} FROM (SELECT count(*) AS n FROM updated) AS c`
    : `SELECT 1 AS ok, ${announce}`;
  return { text: `WITH ${ctes.join(",\n ")}\n ${select}`, params };
}
