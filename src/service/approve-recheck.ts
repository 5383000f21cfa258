import type { Revalidation } from "../adapters/adapter.ts";
import { staleOutcome } from "../plan/drift.ts";
import type { ActionOutcome } from "../plan/outcome.ts";
import type { ActionPreview, PlanDocument } from "../plan/schema.ts";
import { whyMayNot } from "../policy/may-act.ts";
import { redactChange } from "../policy/redact.ts";
import type { PlanRow } from "./transition.ts";
import type { ServiceContext } from "./context.ts";
import type { DecisionTerms } from "./decision-terms.ts";
import { ServiceError } from "./errors.ts";
import { markStale } from "./watch-targets.ts";

/**
 * What the re-check before an Approve found (issue 15):
 * - `refused`: the click would be refused anyway (may-act's answer comes first), so nothing was
 *   read: a non-approver or an old page never makes Countersign read a target;
 * - `held`: every target still holds what the preview was made from;
 * - `unchecked`: a target could not be read; the approval is recorded marked so, and the
 *   executor's revalidation remains the final gate.
 * A target that changed is not an answer: the plan is made stale and `target_changed` thrown.
 */
export type Recheck = { kind: "refused" } | { kind: "held" } | { kind: "unchecked"; why: string };

/**
 * Re-reads the plan's targets before an Approve that would be recorded, outside any transaction
 * (no network I/O under the row lock). One statement reads what may-act needs, the document and
 * the preview; then every action is revalidated by its target's adapter with the read
 * credential (ctx.targets), the judgement the executor and the watcher use: a target that
 * already holds the change is not a change (the executor will record it applied, reconciled).
 * Changed: the plan moves to stale as a system
 * transition (through the one transition path) and the click is refused with `target_changed`,
 * saying what changed, masked as previews are.
 */
export async function recheckBeforeApprove(
  ctx: ServiceContext,
  input: { planId: string; hash: string; userId: string; memberOf: readonly string[] },
  terms: DecisionTerms,
): Promise<Recheck> {
  const [plan] = await ctx.database.query<PlanNow>(PLAN_NOW, [input.planId]);
  if (!plan) return { kind: "refused" };
  const facts = { status: plan.status, expiresAt: new Date(Number(plan.expires_ms)), hash: plan.hash, onBehalfOf: terms.onBehalfOf, policy: terms.policy, approvals: plan.approvals?.split(" ") ?? [] };
  if (whyMayNot({ userId: input.userId, memberOf: input.memberOf }, facts, { verb: "decide", verdict: "approve", hash: input.hash }, ctx.clock())) return { kind: "refused" };

  const document = JSON.parse(plan.document) as PlanDocument;
  const preview = JSON.parse(plan.preview) as { actions: ActionPreview[] };
  // Each action's adapter re-reads with the target's read credential and judges, as the executor will.
  const checks = await Promise.all(document.actions.map(async (action, i): Promise<Revalidation | Error> => {
    try {
      const seen = preview.actions[i];
      return await ctx.targets.readerFor(action.target).revalidate(action, { before: seen?.before ?? null, after: seen?.after ?? null });
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
  }));
  const drifted: ActionOutcome[] = [];
  const failures: string[] = [];
  for (const [i, action] of document.actions.entries()) {
    const check = checks[i]!;
    if (check instanceof Error) failures.push(check.message);
    else if (check.state === "stale") drifted.push(staleOutcome(action, i, check));
  }
  if (drifted.length > 0) {
    await markStale(ctx, input.planId, document, drifted, "approve re-check");
    throw targetChanged(ctx, drifted);
  }
  if (failures.length > 0) {
    ctx.logger.warn({ planId: input.planId, failures }, "an approval's targets could not be re-checked; recording it marked so");
    return { kind: "unchecked", why: `could not re-check: ${failures.join("; ")}`.slice(0, 2000) };
  }
  return { kind: "held" };
}

/**
 * What may-act needs, the document and the preview, as text on both drivers. Every Approve sends
 * it, so its text is made once and sent past the query builder (building and mapping it took
 * 0.2-0.5 ms of the click's path, cold).
 */
type PlanNow = { status: PlanRow["status"]; hash: string; expires_ms: string | number; document: string; preview: string; approvals: string | null };
const PLAN_NOW = `SELECT status, hash, floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms, document::text AS document, preview::text AS preview,
    (SELECT string_agg(d.user_id, ' ') FROM decisions d WHERE d.plan_id = plans.id AND d.verdict = 'approve') AS approvals
  FROM plans WHERE id = $1::uuid`;

/** The refusal, with what changed on each target since the preview, masked as previews are. */
function targetChanged(ctx: Pick<ServiceContext, "redaction">, drifted: ActionOutcome[]): ServiceError {
  const changes = drifted.map((d) => ({ target: d.target, path: d.path, changedSincePreview: (d.changedSincePreview ?? []).map((c) => redactChange(c, ctx.redaction)) }));
  const said = changes.map((c) => {
    const fields = c.changedSincePreview.slice(0, 3).map((f) => `${f.path || "/"} is now ${show(f.to)}, was ${show(f.from)}`);
    const more = c.changedSincePreview.length > 3 ? ` and ${c.changedSincePreview.length - 3} more` : "";
    return `${c.target} ${c.path}${fields.length > 0 ? `: ${fields.join("; ")}${more}` : " changed"}`;
  });
  return new ServiceError("target_changed", `The target changed since you were shown this plan: ${said.join(". ")}. Your approval was not recorded and the plan is now stale; the agent has to re-plan.`, { details: { changes } });
}

function show(value: unknown): string {
  if (value === undefined) return "absent";
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
