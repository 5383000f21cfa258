import { sql, type SQL } from "drizzle-orm";
import { limitsOf, limitVerdict, WINDOW_MS, type AgentLimits, type AgentUsage, type LimitRefusal } from "../policy/agent-limits.ts";
import { causeChain } from "../store/database-errors.ts";
import type { Database } from "../store/db.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";

/*
 * Agent limits (issue 14) at submit: the rule (src/policy/agent-limits.ts) judges the usage read
 * here in one statement (readAgentUsage) before any target is read; admitPlanGuard, riding inside
 * the plan's INSERT (migration 0013), holds the limits exactly under concurrency.
 */

/** SQLSTATE the admission guard raises (migration 0013); nothing else uses it. */
const OVER_LIMIT_SQLSTATE = "CSLIM";

/** The `rate_limited` refusal: every limit reached, and the latest of their retry times (all must pass). */
export function rateLimited(agentName: string, refusals: LimitRefusal[]): ServiceError {
  const retryAfterSeconds = refusals.length ? Math.max(...refusals.map((r) => r.retryAfterSeconds)) : 1;
  const message = refusals.length
    ? `${refusals.map((r) => r.message).join("; and ")}. Retry after ${retryAfterSeconds} s.`
    // The guard saw a limit reached that a re-read no longer shows: plans submitted at the same
    // time took the last places, and one has left since. Retrying soon is right.
    : `agent ${agentName} reached its limits with plans submitted at the same time. Retry after ${retryAfterSeconds} s.`;
  const first = refusals[0];
  return new ServiceError("rate_limited", message, {
    details: { retryAfterSeconds, ...(first ? { limit: first.key, value: first.value } : {}) },
  });
}

/** The guard's slots (migration 0016): at most this many submissions of an agent are in flight unseen. */
const SLOTS = 8;

/**
 * One statement: the agent's usage, each count stopped at its limit. The per-minute window is
 * served by plans_agent_created_at, the open plans and their expiry by plans_agent_open. First it
 * reads how many plans the agent has ever stored (agent_admissions, migration 0027), a bound on
 * both counts: when that is 2 x 8 or more below both limits, the counts are not made (each would
 * walk every plan of the agent in the minute, or every open one) and the bound stands for both;
 * the guard then admits under its slot by the bound too. Nearer, the counts are made as before.
 * Each count's subquery is gated on `near`, a one-time filter: when the bound is far from both
 * limits, PostgreSQL does not run them. Every submit sends it, so its text is made once and sent
 * past the query builder (drizzle built it anew per call).
 * Parameters: $1 agent, $2 window start, $3 now, $4 margin, $5 plansPerMinute, $6 maxPending.
 */
const AGENT_USAGE = `
    SELECT a.admitted, a.near, w.recent, w.oldest,
      (SELECT count(*)::int FROM (SELECT 1 FROM plans WHERE a.near AND agent_id = $1 AND status IN ('pending', 'approved') LIMIT $6::int) o) AS open,
      (SELECT (extract(epoch FROM expires_at) * 1000)::float8 FROM plans WHERE a.near AND agent_id = $1 AND status = 'pending' AND expires_at > $3::timestamptz ORDER BY expires_at LIMIT 1) AS soonest
    FROM (
      SELECT b.admitted, NOT (b.admitted + $4::int <= $5::int AND b.admitted + $4::int <= $6::int) AS near
      FROM (SELECT coalesce(sum(admitted), 0)::bigint AS admitted FROM agent_admissions WHERE agent_id = $1) b
    ) a,
    LATERAL (
      SELECT count(*)::int AS recent, (extract(epoch FROM min(created_at)) * 1000)::float8 AS oldest
      FROM (SELECT created_at FROM plans WHERE a.near AND agent_id = $1 AND created_at > $2::timestamptz ORDER BY created_at DESC LIMIT $5::int) r
    ) w`;

export async function readAgentUsage(database: Database, agentId: string, limits: AgentLimits, nowMs: number): Promise<AgentUsage> {
  const since = new Date(nowMs - WINDOW_MS).toISOString();
  const now = new Date(nowMs).toISOString();
  const [row] = await database.query<{ admitted: number | string; near: boolean; recent: number; oldest: number | null; open: number; soonest: number | null }>(
    AGENT_USAGE,
    [agentId, since, now, 2 * SLOTS, limits.plansPerMinute, limits.maxPending],
  );
  if (!row) throw new Error("the agent usage query returned no row");
  if (!row.near) {
    // Far from both limits: nothing to refuse, so no retry times are needed.
    const bound = Number(row.admitted);
    return { recent: bound, oldestRecentMs: null, open: bound, soonestExpiryMs: null };
  }
  return { recent: Number(row.recent), oldestRecentMs: row.oldest === null ? null : Number(row.oldest), open: Number(row.open), soonestExpiryMs: row.soonest === null ? null : Number(row.soonest) };
}

/**
 * The agent id for the plan's INSERT, computed by countersign_admit_plan() (migrations 0013,
 * 0016, 0024): it counts again once the submission holds one of its agent's 8 slot locks (or, near a
 * limit, the agent's gate alone), and raises OVER_LIMIT_SQLSTATE when admitting could go beyond a
 * limit. Submissions of one agent that raced past readAgentUsage never end above its limits;
 * only those near them wait on each other, and other agents never do. It costs no statement.
 * The counts checkAgentLimits read choose the guard's path when they are far from the limits,
 * which saves the guard two of its four counts (0024).
 */
export function admitPlanGuard(agentId: string, limits: AdmissionLimits, nowMs: number): SQL {
  const g = admitGuard(agentId, limits, nowMs);
  return sql`countersign_admit_plan(${g.agentId}::uuid, ${g.since.toISOString()}::timestamptz, ${g.plansPerMinute}::int, ${g.maxPending}::int, ${g.seen.recent}::int, ${g.seen.open}::int)`;
}

/** The arguments of countersign_admit_plan(), for a statement written as text (store-new-plan.ts). */
export interface AdmitGuard {
  agentId: string;
  /** Start of the per-minute window. */
  since: Date;
  plansPerMinute: number;
  maxPending: number;
  /** The counts this submission read before its preview. */
  seen: { recent: number; open: number };
}

export function admitGuard(agentId: string, limits: AdmissionLimits, nowMs: number): AdmitGuard {
  return { agentId, since: new Date(nowMs - WINDOW_MS), plansPerMinute: limits.plansPerMinute, maxPending: limits.maxPending, seen: limits.seen };
}

/** The limits the plan's INSERT holds, with the counts read for them (as read: the guard counts the replaced version too). */
export interface AdmissionLimits extends AgentLimits {
  seen: { recent: number; open: number };
}

/** Whether a database error is the admission guard's refusal. */
export function isOverLimit(err: unknown): boolean {
  return causeChain(err).some((e) => (e as { code?: unknown }).code === OVER_LIMIT_SQLSTATE);
}

/**
 * Whether the submission replaces one of the agent's open plans (a re-plan of a pending or
 * approved version, issue 15): that version leaves in the same transaction, so it does not count
 * towards maxPending, or an agent at its limit could never re-plan.
 */
export interface Replacing {
  replacesOpen?: boolean;
}

/**
 * Refuses the submission when the agent is at a limit: one statement, before any target is
 * read. Returns the limits for the guard of the plan's INSERT (admitPlanGuard).
 */
export async function checkAgentLimits(ctx: Pick<ServiceContext, "database" | "config" | "clock">, agent: { id: string; name: string }, replacing: Replacing = {}): Promise<AdmissionLimits> {
  const limits = limitsOf(ctx.config.limits, agent.name);
  const nowMs = ctx.clock().getTime();
  const usage = await readAgentUsage(ctx.database, agent.id, limits, nowMs);
  const refusals = limitVerdict(agent.name, limits, counted(usage, replacing), nowMs);
  if (refusals.length > 0) throw rateLimited(agent.name, refusals);
  const seen = { recent: usage.recent, open: usage.open };
  // The guard counts in SQL and cannot leave the replaced version out, so it allows one more.
  return replacing.replacesOpen ? { ...limits, maxPending: limits.maxPending + 1, seen } : { ...limits, seen };
}

/** The refusal after the INSERT's guard refused: the usage read again (now committed), for the message and Retry-After. */
export async function guardRefusal(ctx: Pick<ServiceContext, "database" | "config" | "clock">, agent: { id: string; name: string }, replacing: Replacing = {}): Promise<ServiceError> {
  const limits = limitsOf(ctx.config.limits, agent.name);
  const nowMs = ctx.clock().getTime();
  return rateLimited(agent.name, limitVerdict(agent.name, limits, counted(await readAgentUsage(ctx.database, agent.id, limits, nowMs), replacing), nowMs));
}

const counted = (usage: AgentUsage, replacing: Replacing): AgentUsage => (replacing.replacesOpen ? { ...usage, open: Math.max(0, usage.open - 1) } : usage);
