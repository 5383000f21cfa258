import { and, asc, eq, gt } from "drizzle-orm";
import { likenessOf, type Likeness } from "../../plan/alike.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import { plans } from "../../store/schema.ts";
import { statusIs } from "../../store/plan-status-sql.ts";
import { decidableNow } from "../access/decidable-now.ts";
import type { ServiceContext } from "../context.ts";

/** How many of one agent's pending plans are looked through for the alike ones: more than one batch holds, bounded. */
const SCAN = 1000;

/** A pending plan alike to another, that a person may decide now. */
export interface AlikePlan {
  id: string;
  hash: string;
}

/**
 * The pending plans alike to `likeness` (of the agent `agentId`) that this person may decide
 * now, oldest first: the one rule, asked per plan, so a plan they requested, already approved,
 * or may not decide is left out, as is one whose user group Slack could not answer for.
 */
export async function alikeWaitingFor(
  ctx: Pick<ServiceContext, "database" | "clock" | "directory">,
  input: { userId: string; agentId: string; likeness: Likeness },
): Promise<AlikePlan[]> {
  const now = ctx.clock();
  // Read through plans_agent_open: one agent's open plans, as many as its limits.maxPending allows.
  const rows = await ctx.database.db
    .select({ id: plans.id, status: plans.status, hash: plans.hash, document: plans.document, expiresAt: plans.expiresAt })
    .from(plans)
    .where(and(eq(plans.agentId, input.agentId), statusIs("pending"), gt(plans.expiresAt, now)))
    .orderBy(asc(plans.createdAt), asc(plans.id))
    .limit(SCAN);
  const alike = rows.filter((r) => likenessOf(r.document as PlanDocument)?.key === input.likeness.key);
  if (alike.length === 0) return [];
  // The one rule, as every list of what waits for a person asks it (delegations included).
  const { plans: decidable } = await decidableNow(ctx, input.userId, alike);
  return decidable.map((r) => ({ id: r.id, hash: r.hash }));
}
