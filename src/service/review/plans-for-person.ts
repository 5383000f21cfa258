import { and, asc, desc, gt } from "drizzle-orm";
import { likenessOf, type Likeness } from "../../plan/alike.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import { plans } from "../../store/schema.ts";
import { decidableNow } from "../access/decidable-now.ts";
import type { ServiceContext } from "../context.ts";
import { statusIs } from "../../store/plan-status-sql.ts";

export interface WaitingPlan {
  id: string;
  title: string;
  expiresAt: Date;
  reviewUrl: string;
  /** The exact version buttons bind to. */
  hash: string;
  agent: string;
  actions: { target: string; op: string }[];
  risk?: "low" | "medium" | "high" | undefined;
  /** What makes it alike to other plans (src/plan/alike.ts); undefined when its policy keeps it out of batches. */
  likeness?: Likeness | undefined;
}

/**
 * `newest`: the most recent pending plans (a quick list). `soonest`: soonest expiry first, over
 * the pending plans that have not expired (App Home, where what runs out first matters most).
 */
export type WaitingOrder = "newest" | "soonest";

/** How many recent pending plans are looked at: a list for one person, not a report. */
const SCAN = 200;

/**
 * Pending plans this person may decide now, newest or soonest-expiring first: the one rule, asked per plan, so a
 * plan they already approved, requested, or may not decide is left out. `uncheckedGroups` names
 * approver groups Slack could not answer for just now (their plans are left out, and the door says so).
 */
export async function plansWaitingFor(
  ctx: ServiceContext,
  userId: string,
  limit = 20,
  order: WaitingOrder = "newest",
): Promise<{ plans: WaitingPlan[]; uncheckedGroups: string[]; total: number }> {
  const now = ctx.clock();
  const columns = { id: plans.id, status: plans.status, hash: plans.hash, document: plans.document, expiresAt: plans.expiresAt };
  const rows =
    order === "newest"
      ? await ctx.database.db
          .select(columns)
          .from(plans)
          // No expiry test here: the rule below refuses an expired plan, and with one the planner reads
          // every pending plan through (status, expires_at) and sorts them instead of the newest SCAN
          // through (status, created_at) (its statistics rarely know how many plans expire in the future).
          .where(statusIs("pending"))
          .orderBy(desc(plans.createdAt))
          .limit(SCAN)
      : // Read in order from plans_pending_expiry (expires_at, id WHERE pending): the SCAN soonest, however many there are.
        await ctx.database.db
          .select(columns)
          .from(plans)
          .where(and(statusIs("pending"), gt(plans.expiresAt, now)))
          .orderBy(asc(plans.expiresAt), asc(plans.id))
          .limit(SCAN);
  const { plans: waiting, unchecked } = await decidableNow(ctx, userId, rows);
  return {
    plans: waiting.slice(0, limit).map((r) => waitingPlan(ctx, r.id, r.hash, r.expiresAt, r.document as PlanDocument)),
    uncheckedGroups: [...new Set(unchecked.map((u) => u.group))],
    /** How many of the SCAN plans looked at wait for this person (more than `limit` when some were cut). */
    total: waiting.length,
  };
}

function waitingPlan(ctx: ServiceContext, id: string, hash: string, expiresAt: Date, doc: PlanDocument): WaitingPlan {
  return {
    id,
    title: doc.title,
    expiresAt,
    reviewUrl: `${ctx.config.publicUrl}/plans/${id}`,
    hash,
    agent: doc.agent,
    actions: doc.actions.map((a) => ({ target: a.target, op: a.op })),
    risk: doc.policy.risk?.level,
    likeness: likenessOf(doc),
  };
}
