import type { Adapter, Revalidation, TargetState } from "../../adapters/adapter.ts";
import { staleOutcome } from "../../plan/drift.ts";
import type { ActionOutcome } from "../../plan/outcome.ts";
import type { Json } from "../../plan/json.ts";
import type { ActionPreview } from "../../contract/agent-api.ts";
import { whyMayNot, type Person } from "../../policy/may-act.ts";
import { redactChange } from "../../policy/redact.ts";
import type { ServiceContext } from "../context.ts";
import { plannedActionsOf, type DecisionTerms, type PlannedActions } from "../lifecycle/decision-terms.ts";
import { ServiceError } from "../errors.ts";
import { markStale } from "../watch/watch-targets.ts";

/**
 * The targets' re-read before an Approve, made outside any transaction (no network
 * I/O under the row lock):
 * - `refused`: the click is refused whatever the plan's status and votes (not an approver, the
 *   requester, an old page, a plan past its `expiresAt`), known from the plan's fixed terms:
 *   nothing was read, so a non-approver or an old page never makes Countersign read a target;
 * - `read`: each action's target as its reader found it (read credential), or why it could not
 *   be read. Judged under the row lock, once may-act has allowed the click on the plan as it
 *   is then (judgeRecheck): a click refused there on the plan's status or votes (decided
 *   meanwhile, its grant expired, a second vote) had its reads made but never judged.
 */
export type Recheck = { kind: "refused" } | { kind: "read"; actions: PlannedActions; reads: (TargetRead | Error)[] };

type TargetRead = { adapter: Adapter<any, any, any>; state: TargetState };

/**
 * Re-reads the plan's targets for an Approve, unless its fixed terms refuse the click. No read
 * of the plan comes first (the decision's locked read has what changes, and the preview): the
 * actions are remembered from its submit or read once.
 */
export async function recheckBeforeApprove(
  ctx: ServiceContext,
  input: { planId: string; hash: string; person: Person; for: string | undefined },
  terms: DecisionTerms,
): Promise<Recheck> {
  const pendingNow = {
    status: "pending" as const,
    expiresAt: terms.expiresAt,
    hash: terms.hash,
    requesters: terms.requesters,
    policy: terms.policy,
    approvals: [],
  };
  if (whyMayNot(input.person, pendingNow, { verb: "decide", verdict: "approve", hash: input.hash, for: input.for }, ctx.clock())) return { kind: "refused" };
  const actions = await plannedActionsOf(ctx.database, input.planId);
  if (!actions) return { kind: "refused" };
  return { kind: "read", actions, reads: await Promise.all(actions.map((action) => readTarget(ctx, action))) };
}

/**
 * The re-read judged against the preview the reviewers saw, as the executor and the watcher
 * judge (a target that already holds the change is not a change: the executor records it
 * applied, reconciled): pure, for the decision's transaction, under the row lock.
 */
export function judgeRecheck(
  recheck: Extract<Recheck, { kind: "read" }>,
  preview: { actions: ActionPreview[] },
): { drifted: ActionOutcome[]; failures: string[] } {
  const drifted: ActionOutcome[] = [];
  const failures: string[] = [];
  for (const [i, action] of recheck.actions.entries()) {
    const seen = preview.actions[i];
    const check = judged(recheck.reads[i]!, action, { before: seen?.before ?? null, after: seen?.after ?? null });
    if (check instanceof Error) failures.push(check.message);
    else if (check.state === "stale") drifted.push(staleOutcome(action, i, check));
  }
  return { drifted, failures };
}

/** Why an approval is recorded without a full re-check, from the targets that could not be read. */
export function recheckFailedOf(failures: readonly string[]): string {
  return `could not re-check: ${failures.join("; ")}`.slice(0, 2000);
}

/**
 * Thrown from the decision's transaction when a target changed since the preview: it rolls the
 * transaction back, then refuseChanged makes the plan stale and says what changed.
 */
export class TargetsChanged extends Error {
  constructor(readonly drifted: ActionOutcome[]) {
    super("a target changed since the preview");
    this.name = "TargetsChanged";
  }
}

/**
 * A target changed: the plan moves to stale as a system transition (through the one transition
 * path) and the click is refused with `target_changed`, saying what changed, masked as previews are.
 */
export async function refuseChanged(ctx: ServiceContext, planId: string, actions: PlannedActions, drifted: ActionOutcome[]): Promise<never> {
  await markStale(ctx, planId, { actions }, drifted, "approve re-check");
  throw targetChanged(ctx, drifted);
}

/** One action's target, read with its reader; an action whose target cannot be read (not configured, unreachable) is its Error. */
async function readTarget(ctx: ServiceContext, action: PlannedActions[number]): Promise<TargetRead | Error> {
  try {
    const { adapter } = ctx.targets.targetOf(action.target);
    return { adapter, state: await ctx.targets.readerFor(action.target).read(action) };
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** A read's judgement (what the reader's `revalidate` returns), or why there is none. */
function judged(read: TargetRead | Error, action: PlannedActions[number], seen: { before: Json | null; after: Json | null }): Revalidation | Error {
  if (read instanceof Error) return read;
  try {
    return read.adapter.judge(action, seen, read.state);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** The refusal, with what changed on each target since the preview, masked as previews are. */
function targetChanged(ctx: Pick<ServiceContext, "redaction">, drifted: ActionOutcome[]): ServiceError {
  const changes = drifted.map((d) => ({
    target: d.target,
    path: d.path,
    changedSincePreview: (d.changedSincePreview ?? []).map((c) => redactChange(c, ctx.redaction)),
  }));
  const said = changes.map((c) => {
    const fields = c.changedSincePreview.slice(0, 3).map((f) => `${f.path || "/"} is now ${show(f.to)}, was ${show(f.from)}`);
    const more = c.changedSincePreview.length > 3 ? ` and ${c.changedSincePreview.length - 3} more` : "";
    return `${c.target} ${c.path}${fields.length > 0 ? `: ${fields.join("; ")}${more}` : " changed"}`;
  });
  return new ServiceError(
    "target_changed",
    `The target changed since you were shown this plan: ${said.join(". ")}. Your approval was not recorded and the plan is now stale; the agent has to re-plan.`,
    { details: { changes } },
  );
}

function show(value: unknown): string {
  if (value === undefined) return "absent";
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
