import { and, asc, desc, eq, inArray, isNotNull, type SQL } from "drizzle-orm";
import { isPlanId, type PlanDocument, type PlanStatus } from "../plan/schema.ts";
import { PLAN_STATUSES } from "../plan/status.ts";
import { auditEvents, outbox, plans } from "../store/schema.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";
import { planView, type PlanView } from "./plan-view.ts";
import { refusalError } from "./refusal-error.ts";
import { rightsOf, type DecisionRefusal, type Reader } from "./reader-rights.ts";

export type { DecisionRefusal, Reader } from "./reader-rights.ts";

/** A plan as one reviewer sees it, with why they may not decide it now (undefined: they may). */
export type PlanForReader = PlanView & { whyNotDecide: DecisionRefusal | undefined };

/** A plan as a reviewer sees it: the plan, its audit trail, and any side effect that failed for good. */
export interface ReviewedPlan {
  plan: PlanForReader;
  events: { id: number; type: string; actor: unknown; data: unknown; at: string }[];
  deadDeliveries: { kind: string; error: string | null; at: string }[];
}

/**
 * One plan for a person allowed to read it (`not_a_reader` otherwise; `approver_check_failed`
 * when only a user group Slack could not answer for might have let them).
 */
export async function reviewPlan(ctx: ServiceContext, planId: string, reader: Reader): Promise<ReviewedPlan> {
  const [row] = isPlanId(planId) ? await ctx.database.db.select().from(plans).where(eq(plans.id, planId)) : [];
  if (!row) throw new ServiceError("not_found", `there is no plan ${planId}`);
  const rights = await rightsOf(ctx, reader, [row.document as PlanDocument]);
  const refusal = rights.whyMayNotRead(row.document as PlanDocument, row);
  if (refusal && rights.uncheckedGroups.length > 0) {
    throw new ServiceError("approver_check_failed", `could not check your user groups (${rights.uncheckedGroups.join(", ")}) with Slack, so Countersign cannot tell whether you may read this plan; try again shortly`);
  }
  if (refusal) throw refusalError(refusal);
  const events = await ctx.database.db.select().from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id));
  const dead = await ctx.database.db.select().from(outbox).where(and(eq(outbox.planId, planId), isNotNull(outbox.deadAt))).orderBy(asc(outbox.id));
  const view = await planView(ctx.database.db, ctx.config.publicUrl, row, "reviewer", ctx.redaction);
  return {
    plan: { ...view, whyNotDecide: rights.whyMayNotDecide(view) },
    events: events.map((e) => ({ id: e.id, type: e.type, actor: e.actor, data: e.data, at: e.at.toISOString() })),
    deadDeliveries: dead.map((d) => ({ kind: d.kind, error: d.lastError, at: d.deadAt!.toISOString() })),
  };
}

/** How many more recent plans are looked through for someone who reads only the plans they approve. */
const NARROWED_SCAN_FACTOR = 10;

/** Recent plans this person may read, newest first, optionally of some statuses only. */
export async function listPlansForReview(ctx: ServiceContext, reader: Reader, filter: { statuses?: PlanStatus[]; limit?: number } = {}): Promise<PlanForReader[]> {
  const limit = filter.limit ?? 100;
  const where: SQL | undefined = filter.statuses?.length ? inArray(plans.status, filter.statuses) : undefined;
  // Someone who reads only what they approve would otherwise find few of theirs among the
  // latest plans, so look further back for them (bounded: a list, not a search).
  const { readsEverything } = await rightsOf(ctx, reader, []);
  const rows = await ctx.database.db.select().from(plans).where(where).orderBy(desc(plans.createdAt)).limit(readsEverything ? limit : limit * NARROWED_SCAN_FACTOR);
  const rights = await rightsOf(ctx, reader, rows.map((r) => r.document as PlanDocument));
  const readable = rows.filter((r) => rights.whyMayNotRead(r.document as PlanDocument, r) === undefined).slice(0, limit);
  return Promise.all(readable.map(async (r) => {
    const view = await planView(ctx.database.db, ctx.config.publicUrl, r, "reviewer", ctx.redaction);
    return { ...view, whyNotDecide: rights.whyMayNotDecide(view) };
  }));
}

export function parseStatusFilter(raw: string | undefined): PlanStatus[] | undefined {
  if (!raw) return undefined;
  const wanted = raw.split(",").filter((s): s is PlanStatus => (PLAN_STATUSES as readonly string[]).includes(s));
  return wanted.length ? wanted : undefined;
}
