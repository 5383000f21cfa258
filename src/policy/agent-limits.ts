import { LimitsConfig } from "./policy-config.ts";

/*
 * Agent limits, the rule: how many plans one agent may submit per minute, and how
 * many of its plans may wait at once (`pending` or `approved`). Pure: the usage it judges is
 * read by src/service/agents/agent-limits.ts. (No database import here: `policy check` prints limits.)
 */

/** The sliding window of `plansPerMinute`. */
export const WINDOW_MS = 60_000;
/**
 * Retry-After for `maxPending` when no pending plan expires sooner: a reviewer's decision or the
 * executor may free a place at any moment, so an agent is not sent away for the hours a plan's
 * TTL may run.
 */
export const PENDING_RETRY_SECONDS = 30;

const DEFAULTS = LimitsConfig.parse({});

export interface AgentLimits {
  plansPerMinute: number;
  maxPending: number;
  /** The config key each value comes from, as the refusal names it. */
  keys: { plansPerMinute: string; maxPending: string };
}

/** The limits of one agent: its own under `limits.agents.<name>`, else the top-level ones, else the defaults. */
export function limitsOf(config: LimitsConfig | undefined, agentName: string): AgentLimits {
  const top = config ?? DEFAULTS;
  const own = top.agents[agentName];
  const pick = (name: "plansPerMinute" | "maxPending") =>
    own?.[name] !== undefined ? { value: own[name], key: `limits.agents.${agentName}.${name}` } : { value: top[name], key: `limits.${name}` };
  const perMinute = pick("plansPerMinute");
  const pending = pick("maxPending");
  return { plansPerMinute: perMinute.value, maxPending: pending.value, keys: { plansPerMinute: perMinute.key, maxPending: pending.key } };
}

/** What an agent has used, each count read only as far as its limit (no more is needed to judge it). */
export interface AgentUsage {
  /** Plans created in the last minute, at most plansPerMinute. */
  recent: number;
  /** The oldest of those counted (ms since the epoch): when it leaves the window, a place frees. */
  oldestRecentMs: number | null;
  /** Plans pending or approved, at most maxPending. */
  open: number;
  /** The soonest expiry of a pending plan (ms since the epoch), if any is still to come. */
  soonestExpiryMs: number | null;
}

export interface LimitRefusal {
  limit: "plansPerMinute" | "maxPending";
  key: string;
  value: number;
  retryAfterSeconds: number;
  message: string;
}

/** The limits an agent is at, each with when to retry; empty when it may submit. */
export function limitVerdict(agentName: string, limits: AgentLimits, usage: AgentUsage, nowMs: number): LimitRefusal[] {
  const refusals: LimitRefusal[] = [];
  if (usage.recent >= limits.plansPerMinute) {
    const leaves = usage.oldestRecentMs === null ? nowMs : usage.oldestRecentMs + WINDOW_MS;
    refusals.push({
      limit: "plansPerMinute",
      key: limits.keys.plansPerMinute,
      value: limits.plansPerMinute,
      retryAfterSeconds: wholeSeconds(leaves - nowMs),
      message: `agent ${agentName} submitted ${usage.recent} plans in the last minute; ${limits.keys.plansPerMinute} is ${limits.plansPerMinute}`,
    });
  }
  if (usage.open >= limits.maxPending) {
    const expires = usage.soonestExpiryMs === null ? Infinity : usage.soonestExpiryMs - nowMs;
    refusals.push({
      limit: "maxPending",
      key: limits.keys.maxPending,
      value: limits.maxPending,
      retryAfterSeconds: wholeSeconds(Math.min(PENDING_RETRY_SECONDS * 1000, expires)),
      message: `agent ${agentName} has ${usage.open} plans pending or approved; ${limits.keys.maxPending} is ${limits.maxPending}`,
    });
  }
  return refusals;
}

/** Retry-After is whole seconds, at least 1 (0 would invite a retry into the same refusal). */
function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
