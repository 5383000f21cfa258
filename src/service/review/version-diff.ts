import { inArray } from "drizzle-orm";
import { neutralizeBidiJson } from "../../plan/bidi.ts";
import type { Json } from "../../plan/json.ts";
import { planDiff, type PlanDiff } from "../../policy/plan-diff.ts";
import type { ActionPreview } from "../../contract/agent-api.ts";
import { plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";

/**
 * "Changed since version <short hash>" for a re-plan, as reviewers see it (Slack preview,
 * browser page): both versions' previews read unmasked, compared, and every change masked as
 * previews are and bidi-neutralized as reviewer views are. Undefined for a plan that replaces
 * nothing (one read otherwise).
 */
export async function changedSinceOf(
  ctx: Pick<ServiceContext, "database" | "redaction">,
  plan: { id: string; supersedes?: { id: string } | undefined },
): Promise<PlanDiff | undefined> {
  if (!plan.supersedes) return undefined;
  const rows = await ctx.database.db
    .select({ id: plans.id, hash: plans.hash, preview: plans.preview })
    .from(plans)
    .where(inArray(plans.id, [plan.supersedes.id, plan.id]));
  const version = (id: string) => {
    const row = rows.find((r) => r.id === id);
    return row && { id: row.id, hash: row.hash, actions: (row.preview as { actions: ActionPreview[] }).actions };
  };
  const old = version(plan.supersedes.id);
  const next = version(plan.id);
  if (!old || !next) return undefined;
  return neutralizeBidiJson(planDiff(old, next, ctx.redaction) as unknown as Json) as unknown as PlanDiff;
}
