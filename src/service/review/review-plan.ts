import { and, asc, desc, eq, isNotNull, sql, type SQL } from "drizzle-orm";
import { alikeOffers, likenessOf, type AlikeOffer } from "../../plan/alike.ts";
import { isPlanId, type PlanDocument, type PlanStatus } from "../../plan/schema.ts";
import { PLAN_STATUSES } from "../../plan/status.ts";
import { auditEvents, outbox, plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { planView, type PlanView } from "../lifecycle/plan-view.ts";
import { changedSinceOf } from "./version-diff.ts";
import type { PlanDiff } from "../../policy/plan-diff.ts";
import { refusalError } from "../access/refusal-error.ts";
import { rightsOf, type DecisionRefusal, type Reader } from "../access/reader-rights.ts";
import { statusIn, statusIs } from "../../store/plan-status-sql.ts";
import { executorHold } from "../execution/executor-hold.ts";

export type { DecisionRefusal, Reader } from "../access/reader-rights.ts";

/** A plan as one reviewer sees it, with why they may not decide it now (undefined: they may). */
export type PlanForReader = PlanView & { whyNotDecide: DecisionRefusal | undefined };

/** A plan as a reviewer sees it: the plan, its audit trail, and any side effect that failed for good. */
export interface ReviewedPlan {
  plan: PlanForReader;
  /** A re-plan: what it does differently from the version it replaces, masked as previews are. */
  changedSince?: PlanDiff | undefined;
  /** Whether this reader may revoke the plan now (approved, unclaimed; an approver or an admin). */
  mayRevoke: boolean;
  events: { id: number; type: string; actor: unknown; data: unknown; at: string }[];
  deadDeliveries: { kind: string; error: string | null; at: string }[];
}

/** Which plan a person asks to read. */
export interface ReviewPlanInput {
  planId: string;
  reader: Reader;
}

/**
 * One plan for a person allowed to read it (`not_a_reader` otherwise; `approver_check_failed`
 * when only a user group Slack could not answer for might have let them).
 */
export async function reviewPlan(ctx: ServiceContext, { planId, reader }: ReviewPlanInput): Promise<ReviewedPlan> {
  const [row] = isPlanId(planId) ? await ctx.database.db.select().from(plans).where(eq(plans.id, planId)) : [];
  if (!row) throw new ServiceError("not_found", `there is no plan ${planId}`);
  const rights = await rightsOf(ctx, reader, [row.document as PlanDocument]);
  const refusal = rights.whyMayNotRead(row.document as PlanDocument, row);
  if (refusal && rights.uncheckedGroups.length > 0) {
    throw new ServiceError(
      "approver_check_failed",
      `could not check your user groups (${rights.uncheckedGroups.join(", ")}) with Slack, so Countersign cannot tell whether you may read this plan; try again shortly`,
    );
  }
  if (refusal) throw refusalError(refusal);
  const events = await ctx.database.db.select().from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id));
  const dead = await ctx.database.db
    .select()
    .from(outbox)
    .where(and(eq(outbox.planId, planId), isNotNull(outbox.deadAt)))
    .orderBy(asc(outbox.id));
  const view = await planView(ctx.database.db, ctx.config.publicUrl, row, "reviewer", ctx.redaction);
  const changedSince = await changedSinceOf(ctx, view);
  // The pause is on every page already (its banner); what holds this plan alone is said here.
  const held = view.status === "approved" ? await executorHold(ctx, row) : undefined;
  return {
    plan: { ...view, ...(held ? { held } : {}), whyNotDecide: rights.whyMayNotDecide(view) },
    ...(changedSince ? { changedSince } : {}),
    mayRevoke: view.status === "approved" && rights.whyMayNotRevoke(view) === undefined,
    events: events.map((e) => ({ id: e.id, type: e.type, actor: e.actor, data: e.data, at: e.at.toISOString() })),
    deadDeliveries: dead.map((d) => ({ kind: d.kind, error: d.lastError, at: d.deadAt!.toISOString() })),
  };
}

/** How many more recent plans are looked through for someone who reads only the plans they approve. */
const NARROWED_SCAN_FACTOR = 10;

/** Who lists recent plans, optionally of some statuses only, and how many at most (100 unless told). */
export interface RecentListInput {
  reader: Reader;
  statuses?: PlanStatus[] | undefined;
  limit?: number | undefined;
}

/** Recent plans this person may read, newest first, optionally of some statuses only. */
export async function listPlansForReview(ctx: ServiceContext, { reader, statuses, limit = 100 }: RecentListInput): Promise<PlanForReader[]> {
  const where: SQL | undefined = statuses?.length ? statusIn(statuses) : undefined;
  // Someone who reads only what they approve would otherwise find few of theirs among the
  // latest plans, so look further back for them (bounded: a list, not a search).
  const { readsEverything } = await rightsOf(ctx, reader, []);
  const rows = await ctx.database.db
    .select()
    .from(plans)
    .where(where)
    .orderBy(desc(plans.createdAt))
    .limit(readsEverything ? limit : limit * NARROWED_SCAN_FACTOR);
  const rights = await rightsOf(
    ctx,
    reader,
    rows.map((r) => r.document as PlanDocument),
  );
  const readable = rows.filter((r) => rights.whyMayNotRead(r.document as PlanDocument, r) === undefined).slice(0, limit);
  return Promise.all(
    readable.map(async (r) => {
      const view = await planView(ctx.database.db, ctx.config.publicUrl, r, "reviewer", ctx.redaction);
      return { ...view, whyNotDecide: rights.whyMayNotDecide(view) };
    }),
  );
}

/** How many pending plans one page of the list holds; every pending plan is reachable, page after page. */
export const PENDING_PAGE = 100;

/** Where a page of pending plans ended: the next page starts after this plan (soonest expiry first, then id). */
export interface PendingCursor {
  expiresAt: Date;
  id: string;
}

/** A cursor as the list's "more" link carries it. */
export function pendingCursorText(cursor: PendingCursor): string {
  return `${cursor.expiresAt.toISOString()}~${cursor.id}`;
}

export function parsePendingCursor(raw: string): PendingCursor {
  const [at = "", id = "", ...rest] = raw.split("~");
  const expiresAt = new Date(at);
  // Before 1970 is no plan's expiry, and year 0 would reach PostgreSQL as an error instead of a refusal.
  if (rest.length > 0 || !isPlanId(id) || !/^\d{4}-\d\d-\d\dT/.test(at) || Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() < 0) {
    throw new ServiceError(
      "invalid_request",
      `pending_after must be "<expiry>~<plan id>" as the list's "more pending" link gives it, not ${JSON.stringify(raw.slice(0, 100))}`,
    );
  }
  return { expiresAt, id };
}

/** Who lists pending plans, where the page starts (none: the first page) and how long it is. */
export interface PendingPageInput {
  reader: Reader;
  after?: PendingCursor | undefined;
  limit?: number | undefined;
}

/**
 * Pending plans this person may read, however old, soonest expiry first (the ones that will
 * lapse unless someone acts), one page at a time: `next` is where the following page starts,
 * undefined on the last. Read from plans_pending_expiry, so a page costs its own rows, not the
 * pending or stored plans. Plan times are stored to the millisecond (they come from
 * the service clock), which is what the cursor keeps.
 */
export async function listPendingForReview(
  ctx: ServiceContext,
  { reader, after: cursor, limit = PENDING_PAGE }: PendingPageInput,
): Promise<{ plans: PlanForReader[]; next: PendingCursor | undefined; alike: AlikeOffer[] }> {
  const { readsEverything } = await rightsOf(ctx, reader, []);
  // Someone who reads only what they approve looks through more rows for a page, bounded like the
  // recent list; what is left is on the next page.
  const scan = readsEverything ? limit : limit * NARROWED_SCAN_FACTOR;
  const after = cursor && sql`(${plans.expiresAt}, ${plans.id}) > (${cursor.expiresAt.toISOString()}::timestamptz, ${cursor.id}::uuid)`;
  const rows = await ctx.database.db
    .select()
    .from(plans)
    .where(and(statusIs("pending"), after))
    .orderBy(asc(plans.expiresAt), asc(plans.id))
    .limit(scan + 1);
  const rights = await rightsOf(
    ctx,
    reader,
    rows.map((r) => r.document as PlanDocument),
  );
  const taken: typeof rows = [];
  let last = -1;
  for (const [i, r] of rows.slice(0, scan).entries()) {
    if (taken.length === limit) break;
    last = i;
    if (rights.whyMayNotRead(r.document as PlanDocument, r) === undefined) taken.push(r);
  }
  const next = last >= 0 && last + 1 < rows.length ? { expiresAt: rows[last]!.expiresAt, id: rows[last]!.id } : undefined;
  const views = await Promise.all(
    taken.map(async (r) => {
      const view = await planView(ctx.database.db, ctx.config.publicUrl, r, "reviewer", ctx.redaction);
      return { ...view, whyNotDecide: rights.whyMayNotDecide(view) };
    }),
  );
  // Alike among the plans this reader may decide, from the stored documents (the views are masked).
  const decidable = taken.filter((_, i) => views[i]!.whyNotDecide === undefined);
  const alike = alikeOffers(decidable.map((r) => ({ id: r.id, likeness: likenessOf(r.document as PlanDocument) })));
  return { plans: views, next, alike };
}

/** The browser's list: who reads it, a status filter (none: every status) and where the page of pending plans starts. */
export interface BrowserListInput {
  reader: Reader;
  statuses?: PlanStatus[] | undefined;
  pendingAfter?: PendingCursor | undefined;
}

/** What the browser lists: a page of pending plans (and where the next starts), then recent others. */
export interface BrowserList {
  pending: PlanForReader[];
  /** Groups of two or more alike plans on this page that the reader may decide, offered to review together. */
  alike?: AlikeOffer[] | undefined;
  nextPending: PendingCursor | undefined;
  recent: PlanForReader[];
}

/**
 * What the browser lists: every pending plan (page by page, soonest expiry first), then the most
 * recent of the others, newest first. Pending plans are read on their own, so an old one is
 * never pushed out of the list by newer decided plans.
 */
export async function listForBrowser(ctx: ServiceContext, { reader, statuses, pendingAfter }: BrowserListInput): Promise<BrowserList> {
  const wanted = statuses ?? PLAN_STATUSES;
  const others = wanted.filter((s) => s !== "pending");
  const pending = wanted.includes("pending") ? await listPendingForReview(ctx, { reader, after: pendingAfter }) : { plans: [], next: undefined, alike: [] };
  const recent = others.length > 0 ? await listPlansForReview(ctx, { reader, statuses: others }) : [];
  return { pending: pending.plans, alike: pending.alike, nextPending: pending.next, recent };
}

export function parseStatusFilter(raw: string | undefined): PlanStatus[] | undefined {
  if (!raw) return undefined;
  const wanted = raw.split(",").filter((s): s is PlanStatus => (PLAN_STATUSES as readonly string[]).includes(s));
  return wanted.length ? wanted : undefined;
}
