import type { ResourceState } from "../adapters/http-json.ts";
import type { ApplyResult } from "../adapters/http-json-apply.ts";
import { verifyGrant } from "../grant/grant.ts";
import type { VerifyingKeys } from "../grant/keys.ts";
import { driftOf } from "../plan/drift.ts";
import { fingerprint } from "../plan/fingerprint.ts";
import { holdsChange } from "../plan/holds-change.ts";
import type { ActionOutcome, Outcome } from "../plan/outcome.ts";
import type { ActionPreview, PlanDocument, PlannedAction } from "../plan/schema.ts";
import { settleWrite } from "./verify-write.ts";

/** What the server hands an executor for one approved plan. */
export interface Claim {
  plan: PlanDocument;
  preview: { actions: ActionPreview[] };
  grant: string;
  claimToken: string;
  leaseExpiresAt: string;
}

export interface ExecutionPorts {
  keys: VerifyingKeys;
  environment: string;
  now(): Date;
  /** Re-reads a resource. Throws when the target cannot be read. */
  read(action: PlannedAction): Promise<ResourceState>;
  /** Writes one action with its precondition. */
  write(action: PlannedAction, idempotencyKey: string): Promise<ApplyResult>;
}

/**
 * The executor's whole judgement on one claimed plan, in the order that keeps writes safe:
 * verify the grant, recompute the hash, revalidate every action, and only then apply, in
 * order, stopping at the first failure. Nothing is written on a bad grant, a wrong hash, an
 * expired grant, or when any action is stale.
 */
export async function executePlan(claim: Claim, ports: ExecutionPorts): Promise<Outcome> {
  const { plan } = claim;
  const refuse = (reason: string): Outcome => ({ status: "failed", reason, actions: plan.actions.map((a, i) => skipped(a, i)) });

  const grant = await verifyGrant(ports.keys, claim.grant, ports.environment, ports.now());
  if (!grant.ok) return refuse(grant.reason);
  const hash = fingerprint(plan);
  if (grant.claims.planHash !== hash) return refuse(`the plan received hashes to ${hash}, but the grant approves ${grant.claims.planHash}: the plan was altered after approval`);
  if (grant.claims.sub !== plan.id) return refuse(`the grant is for plan ${grant.claims.sub}, not ${plan.id}`);

  // The preview's before/after are not hashed themselves, but their digests are.
  const states: { before: ActionPreview["before"]; after: ActionPreview["after"] }[] = [];
  for (const [i, action] of plan.actions.entries()) {
    const preview = claim.preview.actions[i];
    if (!preview || fingerprint(preview.before) !== action.beforeDigest || fingerprint(preview.after) !== action.afterDigest) {
      return refuse(`the preview of action ${i} does not match the digests in the approved plan`);
    }
    states.push({ before: preview.before, after: preview.after });
  }

  // Revalidate every action before writing any.
  const checks: ({ kind: "ready" } | { kind: "held" } | { kind: "stale"; outcome: ActionOutcome } | { kind: "unreadable"; detail: string })[] = [];
  for (const [i, action] of plan.actions.entries()) {
    let current: ResourceState;
    try {
      current = await ports.read(action);
    } catch (err) {
      checks.push({ kind: "unreadable", detail: (err as Error).message });
      continue;
    }
    const { before, after } = states[i]!;
    if (holdsChange(before, after, current.exists ? current.body : undefined)) checks.push({ kind: "held" });
    else {
      // The rule the watcher and the Approve re-check share (plan/drift.ts).
      const stale = driftOf(action, i, before, current);
      checks.push(stale ? { kind: "stale", outcome: stale } : { kind: "ready" });
    }
  }

  const allHeld = checks.every((c) => c.kind === "held");
  if (allHeld) return { status: "applied", reconciled: true, actions: plan.actions.map((a, i) => ({ ...base(a, i), status: "applied", reconciled: true, verified: true })) };
  if (grant.expired) {
    const why = checks.some((c) => c.kind === "unreadable") ? "a target could not be re-read to check whether it holds the planned change" : "the targets do not hold the planned change";
    return { status: "expired", reason: `the grant expired before the plan was applied; ${why}, and nothing was written`, actions: plan.actions.map((a, i) => skipped(a, i)) };
  }
  const unreadable = checks.findIndex((c) => c.kind === "unreadable");
  if (unreadable >= 0) {
    const c = checks[unreadable] as { detail: string };
    return { status: "failed", reason: `could not re-read action ${unreadable}: ${c.detail}`, actions: plan.actions.map((a, i) => (i === unreadable ? { ...base(a, i), status: "failed", detail: c.detail } : skipped(a, i))) };
  }
  if (checks.some((c) => c.kind === "stale")) {
    return {
      status: "stale",
      reason: "a target changed since the preview; nothing was written. Re-plan from the current state.",
      actions: checks.map((c, i) => (c.kind === "stale" ? c.outcome : skipped(plan.actions[i]!, i))),
    };
  }

  // Apply in order; stop at the first action that does not apply.
  const results: ActionOutcome[] = [];
  let stopped: ActionOutcome | undefined;
  for (const [i, action] of plan.actions.entries()) {
    if (stopped) {
      results.push(skipped(action, i));
      continue;
    }
    if (checks[i]!.kind === "held") {
      results.push({ ...base(action, i), status: "applied", reconciled: true, verified: true });
      continue;
    }
    // The write, then the re-read that verifies it (or settles a write whose answer was lost).
    const result = await settleWrite(base(action, i), await ports.write(action, `${plan.id}:${i}`), states[i]!, ports.read, action);
    results.push(result);
    if (result.status !== "applied") stopped = result;
  }
  const wrote = results.some((r) => r.status === "applied");
  if (!stopped) return { status: "applied", actions: results };
  return { status: stopped.status === "stale" ? "stale" : "failed", ...(wrote ? { partial: true } : {}), reason: stopped.detail ?? "", actions: results };
}

function base(action: PlannedAction, index: number): Pick<ActionOutcome, "index" | "target" | "path"> {
  return { index, target: action.target, path: action.path };
}

function skipped(action: PlannedAction, index: number): ActionOutcome {
  return { ...base(action, index), status: "skipped" };
}
