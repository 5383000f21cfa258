import { inArray } from "drizzle-orm";
import type { ActionPreview, Change } from "../../contract/agent-api.ts";
import { neutralizeBidi, neutralizeBidiJson } from "../../plan/bidi.ts";
import type { Json } from "../../plan/json.ts";
import type { PlanDocument, PlanStatus } from "../../plan/schema.ts";
import { redactChange } from "../../policy/redact.ts";
import { plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";

/** How long a batch may be decided on after it was opened. */
export const BATCH_TTL_MS = 10 * 60_000;

/** The most plans one batch holds: the oldest alike plans; how many more wait is said. */
export const MAX_BATCH_PLANS = 50;

/** One plan of a batch as the reviewer is shown it: the exact version, and its change masked as previews are. */
export interface BatchPlan {
  planId: string;
  /** The version the batch binds to: what the reviewer saw, and what a decision through the batch is made on. */
  hash: string;
  title: string;
  /** Its status now; undefined when the plan no longer exists (purged). */
  status: PlanStatus | undefined;
  expiresAt: string | undefined;
  reviewUrl: string;
  risk?: "low" | "medium" | "high" | undefined;
  actions: { target: string; path: string; op: string; changes: Change[] }[];
}

/** A batch as it is shown: the plans it binds to, what they share, and until when it may be decided on. */
export interface BatchView {
  id: string;
  reviewer: string;
  via: "slack" | "web";
  /** What the plans share, e.g. "crm merge /email" (src/plan/alike.ts likenessSummary). */
  alike: string;
  agent: string;
  createdAt: string;
  expiresAt: string;
  /** How many more alike plans waited for the reviewer than the batch holds. */
  more: number;
  plans: BatchPlan[];
  /** `PUBLIC_URL/batches/:id`: the batch in the browser. */
  url: string;
}

/**
 * The plans of a batch as the reviewer sees them, in the batch's order: one read of their rows,
 * every value masked as previews are and bidi controls neutralized as reviewer views are.
 */
export async function batchPlansOf(
  ctx: Pick<ServiceContext, "database" | "config" | "redaction">,
  pairs: readonly { planId: string; hash: string }[],
): Promise<BatchPlan[]> {
  if (pairs.length === 0) return [];
  const rows = await ctx.database.db
    .select({ id: plans.id, status: plans.status, document: plans.document, preview: plans.preview, expiresAt: plans.expiresAt })
    .from(plans)
    .where(
      inArray(
        plans.id,
        pairs.map((p) => p.planId),
      ),
    );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return pairs.map(({ planId, hash }) => {
    const row = byId.get(planId);
    const reviewUrl = `${ctx.config.publicUrl}/plans/${planId}`;
    if (!row) return { planId, hash, title: "(this plan no longer exists)", status: undefined, expiresAt: undefined, reviewUrl, actions: [] };
    const doc = row.document as PlanDocument;
    const preview = row.preview as { actions: ActionPreview[] };
    const actions = preview.actions.map((a) => ({
      target: neutralizeBidi(a.target),
      path: neutralizeBidi(a.path),
      op: a.op,
      changes: a.changes.map((c) => neutralizeBidiJson(redactChange(c, ctx.redaction) as unknown as Json) as unknown as Change),
    }));
    return {
      planId,
      hash,
      title: neutralizeBidi(doc.title),
      status: row.status,
      expiresAt: row.expiresAt.toISOString(),
      reviewUrl,
      risk: doc.policy.risk?.level,
      actions,
    };
  });
}
