import { sql, type SQL } from "drizzle-orm";
import type { LimitsConfig } from "../../config/schema.ts";
import { limitsOf, limitVerdict, WINDOW_MS, type AgentLimits, type AgentUsage, type LimitRefusal } from "../../policy/agent-limits.ts";
import { causeChain } from "../../util/cause-chain.ts";
import type { Database } from "../../store/db.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";

/*
 * Agent limits at submit: the rule (src/policy/agent-limits.ts) judges the usage read
 * here in one statement (readAgentUsage) before any target is read; admitPlanGuard, riding inside
 * the plan's INSERT (countersign_admit_plan, migrations/0001_guards.sql), holds the limits exactly under concurrency.
 */

/** SQLSTATE the admission guard raises; nothing else uses it. */
const OVER_LIMIT_SQLSTATE = "CSLIM";

/** The `rate_limited` refusal: every limit reached, and the latest of their retry times (all must pass). */
export function rateLimited(agentName: string, refusals: LimitRefusal[]): ServiceError {
  const retryAfterSeconds = refusals.length ? Math.max(...refusals.map((r) => r.retryAfterSeconds)) : 1;
  const message = refusals.length
    ? `${refusals.map((r) => r.message).join("; and ")}. Retry after ${retryAfterSeconds} s.`
    : // The guard saw a limit reached that a re-read no longer shows: plans submitted at the same
      // time took the last places, and one has left since. Retrying soon is right.
      `agent ${agentName} reached its limits with plans submitted at the same time. Retry after ${retryAfterSeconds} s.`;
  const first = refusals[0];
  return new ServiceError("rate_limited", message, {
    details: { retryAfterSeconds, ...(first ? { limit: first.key, value: first.value } : {}) },
  });
}

/** The guard's slots: at most this many submissions of an agent are in flight unseen. */
const SLOTS = 8;

/**
 * The bound's test, written once for both texts: `near` unless the agent's admissions are 2 x 8
 * (the guard's slots, twice) or more below both limits. `margin` is SQL for 2 x SLOTS.
 */
const nearTest = (admitted: string, perMinute: string, pending: string, margin: string) =>
  `NOT (${admitted} + ${margin} <= ${perMinute} AND ${admitted} + ${margin} <= ${pending})`;

/** How many plans the agent has ever stored (agent_admissions): a bound on both counts. */
const admittedOf = (agent: string) => `SELECT coalesce(sum(admitted), 0)::bigint AS admitted FROM agent_admissions WHERE agent_id = ${agent}`;

/**
 * One statement: the agent's usage, each count stopped at its limit. The per-minute window is
 * served by plans_agent_created_at, the open plans and their expiry by plans_agent_open. First it
 * reads the bound (admittedOf): when that is 2 x 8 or more below both limits, the counts are not
 * made (each would walk every plan of the agent in the minute, or every open one) and the bound
 * stands for both; the guard then admits under its slot by the bound too. Nearer, the counts are
 * made as before. Each count's subquery is gated on `near`, a one-time filter: when the bound is
 * far from both limits, PostgreSQL does not run them (a custom plan still plans them: see
 * store/named-statements.ts, PLAN_CACHE). Its text is made once and sent past the query builder. $1 the agent's id,
 * $2 the window's start, $3 now, $4 the margin, $5 its plansPerMinute, $6 its maxPending.
 */
const AGENT_USAGE = `
    SELECT a.admitted, a.near, w.recent, w.oldest,
      (SELECT count(*)::int FROM (SELECT 1 FROM plans WHERE a.near AND agent_id = $1 AND status IN ('pending', 'approved') LIMIT $6::int) o) AS open,
      (SELECT (extract(epoch FROM expires_at) * 1000)::float8 FROM plans WHERE a.near AND agent_id = $1 AND status = 'pending' AND expires_at > $3::timestamptz ORDER BY expires_at LIMIT 1) AS soonest
    FROM (
      SELECT b.admitted, ${nearTest("b.admitted", "$5::int", "$6::int", "$4::int")} AS near
      FROM (${admittedOf("$1")}) b
    ) a,
    LATERAL (
      SELECT count(*)::int AS recent, (extract(epoch FROM min(created_at)) * 1000)::float8 AS oldest
      FROM (SELECT created_at FROM plans WHERE a.near AND agent_id = $1 AND created_at > $2::timestamptz ORDER BY created_at DESC LIMIT $5::int) r
    ) w`;

/**
 * A submit's first statement: the agent a key belongs to, its bound and whether it is near a
 * limit, and nothing more, so that it is cheap to plan (when every execution was planned, the
 * counts' subqueries in it cost ~1 ms of PostgreSQL's CPU per submit though far from the limits
 * they never ran; it now settles on a generic plan, PLAN_CACHE). Only an agent near a limit then pays
 * a second statement, AGENT_USAGE, for the counts. $1 the key's hash, $2 every agent's limits as
 * limitsJson writes them (an agent's own, else `default`), so PostgreSQL picks the agent's by the
 * name it finds; $3 the margin. No row: the key is unknown or revoked.
 */
const AGENT_BY_KEY_WITH_BOUND = `
    SELECT k.id, k.name, b.admitted, ${nearTest("b.admitted", "(k.lim ->> 0)::int", "(k.lim ->> 1)::int", "$3::int")} AS near
    FROM (SELECT id, name, coalesce($2::jsonb -> 'agents' -> name, $2::jsonb -> 'default') AS lim FROM agents WHERE key_hash = $1 AND revoked_at IS NULL) k,
    LATERAL (${admittedOf("k.id")}) b`;

type UsageRow = { admitted: number | string; near: boolean; recent: number; oldest: number | null; open: number; soonest: number | null };

/** The margin below both limits under which the bound stands for the counts. */
const MARGIN = 2 * SLOTS;

export async function readAgentUsage(database: Database, agentId: string, limits: AgentLimits, nowMs: number): Promise<AgentUsage> {
  const params = [agentId, new Date(nowMs - WINDOW_MS).toISOString(), new Date(nowMs).toISOString(), MARGIN, limits.plansPerMinute, limits.maxPending];
  const [row] = await database.query<UsageRow>(AGENT_USAGE, params);
  if (!row) throw new Error("the agent usage query returned no row");
  return usageOf(row);
}

/** Usage read with the agent's key, as checkAgentLimits takes it, and when. */
export interface ReadUsage {
  usage: AgentUsage;
  nowMs: number;
}

/**
 * The agent holding a key (by its hash) and its usage now; undefined when the key is unknown or
 * revoked. One statement far from the limits (the bound stands for the counts); near them, a
 * second for the counts (the bound only grows, so it finds the agent near again and counts).
 */
export async function readAgentByKeyWithUsage(
  ctx: Pick<ServiceContext, "database" | "config" | "clock">,
  keyHash: string,
): Promise<{ agent: { id: string; name: string }; read: ReadUsage } | undefined> {
  const nowMs = ctx.clock().getTime();
  const [row] = await ctx.database.query<{ id: string; name: string; admitted: number | string; near: boolean }>(AGENT_BY_KEY_WITH_BOUND, [
    keyHash,
    limitsJson(ctx.config.limits),
    MARGIN,
  ]);
  if (!row) return undefined;
  const agent = { id: row.id, name: row.name };
  const usage = row.near ? await readAgentUsage(ctx.database, agent.id, limitsOf(ctx.config.limits, agent.name), nowMs) : boundUsage(row.admitted);
  return { agent, read: { usage, nowMs } };
}

/**
 * Every agent's limits for AGENT_BY_KEY_WITH_BOUND, each resolved by limitsOf (so SQL and the
 * verdict cannot disagree): `default` for agents without their own, `agents.<name>` for those
 * with. Made once per config.
 */
const limitsJsonOf = new WeakMap<object, string>();
const NO_LIMITS_CONFIG = {};
function limitsJson(config: LimitsConfig | undefined): string {
  let json = limitsJsonOf.get(config ?? NO_LIMITS_CONFIG);
  if (json === undefined) {
    const pair = (l: AgentLimits) => [l.plansPerMinute, l.maxPending];
    const agents = Object.fromEntries(Object.keys(config?.agents ?? {}).map((name) => [name, pair(limitsOf(config, name))]));
    // A name no agent can have: limitsOf falls back to the top-level values (or the defaults).
    json = JSON.stringify({ default: pair(limitsOf(config, "\u0000")), agents });
    limitsJsonOf.set(config ?? NO_LIMITS_CONFIG, json);
  }
  return json;
}

function usageOf(row: UsageRow): AgentUsage {
  if (!row.near) return boundUsage(row.admitted);
  return {
    recent: Number(row.recent),
    oldestRecentMs: row.oldest === null ? null : Number(row.oldest),
    open: Number(row.open),
    soonestExpiryMs: row.soonest === null ? null : Number(row.soonest),
  };
}

/** Far from both limits: the bound stands for both counts, and nothing to refuse needs retry times. */
function boundUsage(admitted: number | string): AgentUsage {
  const bound = Number(admitted);
  return { recent: bound, oldestRecentMs: null, open: bound, soonestExpiryMs: null };
}

/**
 * The agent id for the plan's INSERT, computed by countersign_admit_plan()
 * (migrations/0001_guards.sql): it counts again once the submission holds one of its agent's 8 slot locks (or, near a
 * limit, the agent's gate alone), and raises OVER_LIMIT_SQLSTATE when admitting could go beyond a
 * limit. Submissions of one agent that raced past readAgentUsage never end above its limits;
 * only those near them wait on each other, and other agents never do. It costs no statement.
 * The counts checkAgentLimits read choose the guard's path when they are far from the limits,
 * which saves the guard two of its four counts.
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
 * approved version): that version leaves in the same transaction, so it does not count
 * towards maxPending, or an agent at its limit could never re-plan.
 */
export interface Replacing {
  replacesOpen?: boolean;
}

/**
 * Refuses the submission when the agent is at a limit: one statement, before any target is
 * read, or none when the usage was read with the agent's key (`read`, readAgentByKeyWithUsage).
 * Returns the limits for the guard of the plan's INSERT (admitPlanGuard).
 */
export async function checkAgentLimits(
  ctx: Pick<ServiceContext, "database" | "config" | "clock">,
  agent: { id: string; name: string },
  replacing: Replacing = {},
  read?: ReadUsage,
): Promise<AdmissionLimits> {
  const limits = limitsOf(ctx.config.limits, agent.name);
  const nowMs = read?.nowMs ?? ctx.clock().getTime();
  const usage = read?.usage ?? (await readAgentUsage(ctx.database, agent.id, limits, nowMs));
  const refusals = limitVerdict(agent.name, limits, counted(usage, replacing), nowMs);
  if (refusals.length > 0) throw rateLimited(agent.name, refusals);
  const seen = { recent: usage.recent, open: usage.open };
  // The guard counts in SQL and cannot leave the replaced version out, so it allows one more.
  return replacing.replacesOpen ? { ...limits, maxPending: limits.maxPending + 1, seen } : { ...limits, seen };
}

/** The refusal after the INSERT's guard refused: the usage read again (now committed), for the message and Retry-After. */
export async function guardRefusal(
  ctx: Pick<ServiceContext, "database" | "config" | "clock">,
  agent: { id: string; name: string },
  replacing: Replacing = {},
): Promise<ServiceError> {
  const limits = limitsOf(ctx.config.limits, agent.name);
  const nowMs = ctx.clock().getTime();
  return rateLimited(agent.name, limitVerdict(agent.name, limits, counted(await readAgentUsage(ctx.database, agent.id, limits, nowMs), replacing), nowMs));
}

const counted = (usage: AgentUsage, replacing: Replacing): AgentUsage => (replacing.replacesOpen ? { ...usage, open: Math.max(0, usage.open - 1) } : usage);
