import type { Claim } from "../contract/executor-api.ts";
import { setTimeout as sleep } from "node:timers/promises";
import type { AdapterApplyResult, AdapterPlanned, ErrorClass } from "../adapters/adapter.ts";
import { verifyGrant } from "../grant/grant.ts";
import type { VerifyingKeys } from "../grant/keys.ts";
import { staleOutcome } from "../plan/drift.ts";
import { fingerprint } from "../plan/fingerprint.ts";
import type { ActionOutcome, Outcome } from "../plan/outcome.ts";
import type { OpenTarget } from "./open-targets.ts";
import { settleWrite, type Seen } from "./verify-write.ts";

export interface ExecutionPorts {
  keys: VerifyingKeys;
  environment: string;
  now(): Date;
  /** The opened target an action names (./open-targets.ts); throws when it is not configured. */
  target(name: string): OpenTarget;
  /**
   * Aborted when the executor is stopping: no further attempt after a transient error is waited
   * for, and executePlan throws LeftToLease instead of reporting (never in the middle of a write).
   */
  stopping?: AbortSignal;
}

/**
 * The executor stopped while waiting to try a transient failure again: nothing is reported, so
 * the plan stays `executing` until its lease runs out and the next executor takes it over,
 * revalidating first (it finds the change held, or writes it), as after a crash.
 */
export class LeftToLease extends Error {
  constructor(planId: string) {
    super(`stopped while retrying plan ${planId}; it is left to its lease`);
    this.name = "LeftToLease";
  }
}

/** First wait after a transient error, doubled per attempt up to the last. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 4000;

/** One action's revalidation, as the executor acts on it. */
type Check = { kind: "ready" } | { kind: "held" } | { kind: "stale"; outcome: ActionOutcome } | { kind: "unreadable"; detail: string; errorClass: ErrorClass };

/**
 * The executor's whole judgement on one claimed plan, in the order that keeps writes safe:
 * verify the grant, recompute the hash, revalidate every action through its target's adapter,
 * and only then apply, in order, stopping at the first failure. Nothing is written on a bad
 * grant, a wrong hash, an expired grant, or when any action is stale.
 *
 * An error the adapter classes as transient (no answer, a 5xx, a lost connection) is retried
 * with back-off for the first half of the lease (never past the grant's expiry); a permanent
 * one is reported at once. A write is retried only after revalidating again: the failed attempt
 * may have landed, and then the change is held and nothing more is written.
 *
 * Every write (a retry, a later action) starts only while more than the target's timeout is left
 * before the grant expires, so none can land after it: otherwise the plan stops there, `expired`
 * (with `partial` when earlier actions were written).
 */

export async function executePlan(claim: Claim, ports: ExecutionPorts): Promise<Outcome> {
  const { plan } = claim;
  const actions = plan.actions as AdapterPlanned[];
  const refuse = (reason: string): Outcome => ({ status: "failed", reason, actions: actions.map((a, i) => skipped(a, i)) });

  // The first action's revalidating read is sent now and runs while the grant is verified
  // (WebCrypto, 1.5–3 ms cold): a GET with the read credential, judged against the preview it
  // came with. Its answer is used only once the grant, the hash and the preview's digests have
  // passed, and nothing is written before they have; on a refusal it is dropped unread.
  const targets = actions.map((action, i) => targetOf(ports, action, i));
  const seenInClaim = (i: number): Seen => ({ before: claim.preview.actions[i]?.before ?? null, after: claim.preview.actions[i]?.after ?? null });
  const revalidate = async (i: number): Promise<Check> => {
    const action = actions[i]!;
    const target = targets[i]!;
    if (typeof target === "string") return { kind: "unreadable", detail: target, errorClass: "permanent" };
    try {
      const answer = await target.reader.revalidate(action, seenInClaim(i));
      return answer.state === "stale" ? { kind: "stale", outcome: staleOutcome(action, i, answer) } : { kind: answer.state };
    } catch (err) {
      return { kind: "unreadable", detail: message(err), errorClass: target.adapter.classify(err) };
    }
  };
  let early: Promise<Check> | undefined = actions.length > 0 && claim.preview.actions[0] ? revalidate(0) : undefined;
  // node:http writes a request on the next tick, which would otherwise wait behind the
  // checks below (the grant, the hashes); one turn lets it leave first.
  if (early) await new Promise<void>((resolve) => setImmediate(resolve));

  const grant = await verifyGrant(ports.keys, claim.grant, ports.environment, ports.now());
  if (!grant.ok) return refuse(grant.reason);
  const hash = fingerprint(plan);
  if (grant.claims.planHash !== hash)
    return refuse(`the plan received hashes to ${hash}, but the grant approves ${grant.claims.planHash}: the plan was altered after approval`);
  if (grant.claims.sub !== plan.id) return refuse(`the grant is for plan ${grant.claims.sub}, not ${plan.id}`);

  // The preview's before/after are not hashed themselves, but their digests are.
  const states: Seen[] = [];
  for (const [i, action] of actions.entries()) {
    const preview = claim.preview.actions[i];
    if (!preview || fingerprint(preview.before) !== action.beforeDigest || fingerprint(preview.after) !== action.afterDigest) {
      return refuse(`the preview of action ${i} does not match the digests in the approved plan`);
    }
    states.push({ before: preview.before, after: preview.after });
  }

  const retry = retrier(claim, ports, grant.claims.exp * 1000);
  const transient = (c: Check) => c.kind === "unreadable" && c.errorClass === "transient";
  // The read started before the grant check is the first attempt of action 0; retries read anew.
  const attempt = (i: number) => {
    const started = i === 0 ? early : undefined;
    early = undefined;
    return started ?? revalidate(i);
  };

  // Revalidate every action before writing any.
  const checks: Check[] = [];
  for (const i of actions.keys()) checks.push(await retry.until(() => attempt(i), transient));

  const allHeld = checks.every((c) => c.kind === "held");
  if (allHeld)
    return { status: "applied", reconciled: true, actions: actions.map((a, i) => ({ ...base(a, i), status: "applied", reconciled: true, verified: true })) };
  if (grant.expired) {
    const why = checks.some((c) => c.kind === "unreadable")
      ? "a target could not be re-read to check whether it holds the planned change"
      : "the targets do not hold the planned change";
    return {
      status: "expired",
      reason: `the grant expired before the plan was applied; ${why}, and nothing was written`,
      actions: actions.map((a, i) => skipped(a, i)),
    };
  }
  const unreadable = checks.findIndex((c) => c.kind === "unreadable");
  if (unreadable >= 0) {
    const { detail } = checks[unreadable] as { detail: string };
    return {
      status: "failed",
      reason: `could not re-read action ${unreadable}: ${detail}`,
      actions: actions.map((a, i) => (i === unreadable ? { ...base(a, i), status: "failed", detail } : skipped(a, i))),
    };
  }
  if (checks.some((c) => c.kind === "stale")) {
    return {
      status: "stale",
      reason: "a target changed since the preview; nothing was written. Re-plan from the current state.",
      actions: checks.map((c, i) => (c.kind === "stale" ? c.outcome : skipped(actions[i]!, i))),
    };
  }

  // Apply in order; stop at the first action that does not apply.
  const results: ActionOutcome[] = [];
  let stopped: ActionOutcome | undefined;
  let expired = false;
  for (const [i, action] of actions.entries()) {
    if (stopped) {
      results.push(skipped(action, i));
      continue;
    }
    if (checks[i]!.kind === "held") {
      results.push({ ...base(action, i), status: "applied", reconciled: true, verified: true });
      continue;
    }
    const result = await applyOne(targets[i] as OpenTarget, action, i, `${plan.id}:${i}`, states[i]!, retry, revalidate);
    results.push(result.outcome);
    if (result.outcome.status !== "applied") {
      stopped = result.outcome;
      expired = result.expired === true;
    }
  }
  const wrote = results.some((r) => r.status === "applied");
  if (!stopped) return { status: "applied", actions: results };
  const partial = wrote ? { partial: true } : {};
  if (expired) {
    const what = wrote ? "the actions before it were written, it and the rest were not" : "nothing was written";
    return {
      status: "expired",
      ...partial,
      reason: `the grant expired before action ${stopped.index} could be written: ${stopped.detail}; ${what}`,
      actions: results,
    };
  }
  return { status: stopped.status === "stale" ? "stale" : "failed", ...partial, reason: stopped.detail ?? "", actions: results };
}

/**
 * One action's write and the re-read that verifies it (or settles a write whose answer was
 * lost). A transient failure is retried after revalidating: held means the failed attempt
 * landed after all, stale that someone else moved the target meanwhile; only ready writes again.
 */
async function applyOne(
  target: OpenTarget,
  action: AdapterPlanned,
  index: number,
  idempotencyKey: string,
  seen: Seen,
  retry: Retrier,
  revalidate: (i: number) => Promise<Check>,
): Promise<{ outcome: ActionOutcome; expired?: true }> {
  const where = base(action, index);
  // Checked right before every write, first and retries alike: a re-read or a wait before it may have used up the grant.
  const tooLate = (before?: string): { outcome: ActionOutcome; expired: true } | undefined => {
    const why = retry.tooLateToWrite(target.writer.timeoutMs);
    return why === undefined
      ? undefined
      : { outcome: { ...where, status: "skipped", detail: before ? `${before}; not tried again: ${why}` : why }, expired: true };
  };
  const first = tooLate();
  if (first) return first;
  let result: AdapterApplyResult = await target.writer.apply(action, idempotencyKey, retry.grantEnd);
  let attempts = 1;
  let failedBefore: string | undefined;
  while (result.status === "failed" && result.errorClass === "transient" && (await retry.next())) {
    failedBefore = result.detail;
    const check = await revalidate(index);
    if (check.kind === "held")
      return { outcome: { ...where, status: "applied", verified: true, detail: `${result.detail}; re-read before trying again: the target holds the change` } };
    if (check.kind === "stale") return { outcome: { ...check.outcome, detail: `${result.detail}; re-read before trying again: ${check.outcome.detail}` } };
    if (check.kind === "unreadable") {
      if (check.errorClass === "transient") continue;
      return { outcome: { ...where, status: "failed", detail: `${result.detail}; re-read before trying again: ${check.detail}` } };
    }
    const late = tooLate(`${result.detail}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}`);
    if (late) return late;
    attempts++;
    result = await target.writer.apply(action, idempotencyKey, retry.grantEnd);
  }
  if (result.status === "failed")
    return { outcome: { ...where, status: "failed", detail: attempts > 1 ? `${result.detail} (after ${attempts} attempts)` : result.detail } };
  // What came before the write (a reconnect, a catalogue read) used up the grant: nothing was sent.
  if (result.status === "expired")
    return {
      outcome: { ...where, status: "skipped", detail: failedBefore !== undefined ? `${failedBefore}; not tried again: ${result.detail}` : result.detail },
      expired: true,
    };
  const outcome = await settleWrite(where, result, () => target.reader.verify(action, seen));
  return {
    outcome:
      failedBefore !== undefined && outcome.status === "applied" && outcome.detail === undefined
        ? { ...outcome, detail: `written after a failed attempt (${failedBefore})` }
        : outcome,
  };
}

interface Retrier {
  /** Runs `attempt` until it returns something `again` does not want repeated, or time is up. */
  until(attempt: () => Promise<Check>, again: (result: Check) => boolean): Promise<Check>;
  /** Waits before the next attempt; false (without waiting) when that would pass the deadline. */
  next(): Promise<boolean>;
  /** The grant's expiry on the monotonic clock (`performance.now()`): the deadline every write is given. */
  readonly grantEnd: number;
  /** Why a write that may take `timeoutMs` to land must not start now (it could land after the grant expires), or undefined. */
  tooLateToWrite(timeoutMs: number): string | undefined;
}

/**
 * The retry budget of one plan: the first half of the lease the claim came with (heartbeats keep
 * the lease meanwhile, and the other half is left for the report), and never past the grant's
 * expiry, so a write is never retried into an expired grant. Both are read on the executor's
 * clock once, then counted down on the monotonic timer (a clock that stands still or steps
 * back cannot stretch the budget).
 */
function retrier(claim: Claim, ports: ExecutionPorts, grantExpiresAt: number): Retrier {
  const now = ports.now().getTime();
  const leaseEnd = Date.parse(claim.leaseExpiresAt);
  const budget = Math.min(Number.isNaN(leaseEnd) ? 0 : (leaseEnd - now) / 2, grantExpiresAt - now);
  const deadline = performance.now() + budget;
  const grantEnd = performance.now() + (grantExpiresAt - now);
  const { stopping } = ports;
  let waits = 0;
  const next = async () => {
    const delay = Math.min(FIRST_RETRY_MS * 2 ** waits, MAX_RETRY_MS);
    if (stopping?.aborted) throw new LeftToLease(claim.plan.id);
    if (performance.now() + delay > deadline) return false;
    waits++;
    // An abort ends the wait early (node's timer rejects then; the check below says why).
    await sleep(delay, undefined, stopping ? { signal: stopping } : {}).catch(() => undefined);
    if (stopping?.aborted) throw new LeftToLease(claim.plan.id);
    return true;
  };
  return {
    grantEnd,
    async until(attempt, again) {
      for (let attempts = 1; ; attempts++) {
        const result = await attempt();
        if (!again(result) || !(await next())) {
          return attempts > 1 && result.kind === "unreadable" ? { ...result, detail: `${result.detail} (after ${attempts} attempts)` } : result;
        }
      }
    },
    next,
    tooLateToWrite(timeoutMs) {
      const left = Math.floor(grantEnd - performance.now());
      if (left > timeoutMs) return undefined;
      return left <= 0
        ? "the grant has expired"
        : `the grant expires in ${left} ms, within the target's timeout (${timeoutMs} ms), so a write started now could land after it`;
    },
  };
}

/** The opened target of action `i`, or why it cannot be used: not configured, another kind, or a planned action its adapter does not accept. */
function targetOf(ports: ExecutionPorts, action: AdapterPlanned, index: number): OpenTarget | string {
  let target: OpenTarget;
  try {
    target = ports.target(action.target);
  } catch (err) {
    return message(err);
  }
  if (target.adapter.kind !== action.kind)
    return `action ${index} is a '${action.kind}' action, but target '${action.target}' is a '${target.adapter.kind}' target in the executor's config`;
  const parsed = target.adapter.plannedSchema.safeParse(action);
  if (!parsed.success)
    return `action ${index} is not a valid '${action.kind}' action: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(action)"}: ${i.message}`).join("; ")}`;
  return target;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function base(action: AdapterPlanned, index: number): Pick<ActionOutcome, "index" | "target" | "path"> {
  return { index, target: action.target, path: action.path };
}

function skipped(action: AdapterPlanned, index: number): ActionOutcome {
  return { ...base(action, index), status: "skipped" };
}
