import { and, desc, eq, inArray } from "drizzle-orm";
import { approverGroups } from "../policy/approvers.ts";
import { whyMayNot } from "../policy/may-act.ts";
import type { PlanDocument } from "../plan/schema.ts";
import { decisions, plans } from "../store/schema.ts";
import { membershipOf } from "./approver-groups.ts";
import type { ServiceContext } from "./context.ts";

export interface WaitingPlan {
  id: string;
  title: string;
  expiresAt: Date;
  reviewUrl: string;
}

/** How many recent pending plans are looked at: a list for one person, not a report. */
const SCAN = 200;

/**
 * Pending plans this person may decide now, newest first: the one rule, asked per plan, so a
 * plan they already approved, requested, or may not decide is left out. `uncheckedGroups` names
 * approver groups Slack could not answer for just now (their plans are left out, and the door says so).
 */
export async function plansWaitingFor(ctx: ServiceContext, userId: string, limit = 20): Promise<{ plans: WaitingPlan[]; uncheckedGroups: string[] }> {
  const now = ctx.clock();
  const rows = await ctx.database.db
    .select({ id: plans.id, status: plans.status, hash: plans.hash, document: plans.document, expiresAt: plans.expiresAt })
    .from(plans)
    // No expiry test here: the rule below refuses an expired plan, and with one the planner reads
    // every pending plan through (status, expires_at) and sorts them instead of the newest SCAN
    // through (status, created_at) (its statistics rarely know how many plans expire in the future).
    .where(eq(plans.status, "pending"))
    .orderBy(desc(plans.createdAt))
    .limit(SCAN);
  if (rows.length === 0) return { plans: [], uncheckedGroups: [] };
  const votes = await ctx.database.db
    .select({ planId: decisions.planId, userId: decisions.userId })
    .from(decisions)
    .where(and(inArray(decisions.planId, rows.map((r) => r.id)), eq(decisions.verdict, "approve")));
  const docs = rows.map((r) => r.document as PlanDocument);
  const { memberOf, unchecked } = await membershipOf(ctx, userId, docs.flatMap((d) => approverGroups(d.policy)));
  const waiting = rows.filter((r, i) => {
    const doc = docs[i]!;
    const approvals = votes.filter((v) => v.planId === r.id).map((v) => v.userId);
    const facts = { status: r.status, expiresAt: r.expiresAt, hash: r.hash, onBehalfOf: doc.onBehalfOf, policy: doc.policy, approvals };
    return whyMayNot({ userId, memberOf }, facts, { verb: "decide" }, now) === undefined;
  });
  return {
    plans: waiting.slice(0, limit).map((r) => ({ id: r.id, title: (r.document as PlanDocument).title, expiresAt: r.expiresAt, reviewUrl: `${ctx.config.publicUrl}/plans/${r.id}` })),
    uncheckedGroups: unchecked.map((u) => u.group),
  };
}
