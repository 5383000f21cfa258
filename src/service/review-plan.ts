import { and, asc, desc, eq, inArray, isNotNull, type SQL } from "drizzle-orm";
import { isPlanId, type PlanStatus } from "../plan/schema.ts";
import { PLAN_STATUSES } from "../plan/status.ts";
import { auditEvents, outbox, plans } from "../store/schema.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";
import { planView, type PlanView } from "./plan-view.ts";

/** A plan as a reviewer sees it: the plan, its audit trail, and any side effect that failed for good. */
export interface ReviewedPlan {
  plan: PlanView;
  events: { id: number; type: string; actor: unknown; data: unknown; at: string }[];
  deadDeliveries: { kind: string; error: string | null; at: string }[];
}

export async function reviewPlan(ctx: ServiceContext, planId: string): Promise<ReviewedPlan> {
  const [row] = isPlanId(planId) ? await ctx.database.db.select().from(plans).where(eq(plans.id, planId)) : [];
  if (!row) throw new ServiceError("not_found", `there is no plan ${planId}`);
  const events = await ctx.database.db.select().from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id));
  const dead = await ctx.database.db.select().from(outbox).where(and(eq(outbox.planId, planId), isNotNull(outbox.deadAt))).orderBy(asc(outbox.id));
  return {
    plan: await planView(ctx.database.db, ctx.config.publicUrl, row, "reviewer", ctx.redaction),
    events: events.map((e) => ({ id: e.id, type: e.type, actor: e.actor, data: e.data, at: e.at.toISOString() })),
    deadDeliveries: dead.map((d) => ({ kind: d.kind, error: d.lastError, at: d.deadAt!.toISOString() })),
  };
}

/** Recent plans for the review list, newest first, optionally of some statuses only. */
export async function listPlansForReview(ctx: ServiceContext, filter: { statuses?: PlanStatus[]; limit?: number } = {}): Promise<PlanView[]> {
  const where: SQL | undefined = filter.statuses?.length ? inArray(plans.status, filter.statuses) : undefined;
  const rows = await ctx.database.db.select().from(plans).where(where).orderBy(desc(plans.createdAt)).limit(filter.limit ?? 100);
  return Promise.all(rows.map((r) => planView(ctx.database.db, ctx.config.publicUrl, r, "reviewer", ctx.redaction)));
}

export function parseStatusFilter(raw: string | undefined): PlanStatus[] | undefined {
  if (!raw) return undefined;
  const wanted = raw.split(",").filter((s): s is PlanStatus => (PLAN_STATUSES as readonly string[]).includes(s));
  return wanted.length ? wanted : undefined;
}
