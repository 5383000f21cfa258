import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { neutralizeBidiJson } from "../../plan/bidi.ts";
import type { Change } from "../../plan/changes.ts";
import type { Json } from "../../plan/json.ts";
import { redactChange, redactJson, redactPlanned, redactText, type RedactionRules } from "../../policy/redact.ts";
import type { ActionPreview } from "../../contract/agent-api.ts";
import type { PersonAct, PlanDocument } from "../../plan/schema.ts";
import { decisions, plans, targetWatches, watchedActions } from "../../store/schema.ts";
import type { Queryable } from "../../store/db.ts";
import type { Outcome } from "../../plan/outcome.ts";
import type { AfterApplyMismatch } from "../../plan/holds-change.ts";
import type { PlanView } from "../../contract/agent-api.ts";
import type { PlanRow } from "./transition.ts";
import { withRevocation } from "./revocation.ts";

export type { Approval, PlanView } from "../../contract/agent-api.ts";

/**
 * Who a view is for. Reviewers (Slack, browser) never see secret-looking values. The agent gets
 * back the arguments it submitted (to recompute the hash) but not secrets read from the target.
 * Only the executor, through its claim, receives everything as stored.
 */
export type Audience = "agent" | "reviewer";

export async function planView(db: Queryable, publicUrl: string, row: PlanRow, audience: Audience, rules: RedactionRules): Promise<PlanView> {
  const votes = await db.select().from(decisions).where(eq(decisions.planId, row.id)).orderBy(asc(decisions.id));
  const view = await withRevocation(db, row, redactView(rawPlanView(publicUrl, row, votes, await versionsOf(db, row)), audience, rules));
  const watch = await watchOf(db, row);
  return watch ? { ...view, watch } : view;
}

/**
 * How the watcher's re-reads of an open plan's resources went: the oldest last good
 * read and the earliest failure still going on. One read, only for pending and approved plans;
 * undefined when none of its targets is watched (or the watcher has not listed it yet).
 */
async function watchOf(db: Queryable, row: PlanRow): Promise<PlanView["watch"]> {
  if (row.status !== "pending" && row.status !== "approved") return undefined;
  const [found] = await db
    .select({
      watched: sql<number>`count(*)::int`,
      checkedAt: sql<string | null>`min(${targetWatches.checkedAt})`,
      failingSince: sql<string | null>`min(${targetWatches.failedSince})`,
    })
    .from(watchedActions)
    .innerJoin(targetWatches, and(eq(targetWatches.target, watchedActions.target), eq(targetWatches.path, watchedActions.path)))
    .where(eq(watchedActions.planId, row.id));
  if (!found || Number(found.watched) === 0) return undefined;
  const iso = (value: string | Date | null) => (value === null ? null : new Date(value).toISOString());
  return { checkedAt: iso(found.checkedAt), failingSince: iso(found.failingSince) };
}

/** The view of a plan just stored: nobody can have decided on it yet, so there are no votes to read (and nothing supersedes it yet). */
export function newPlanView(publicUrl: string, row: PlanRow, audience: Audience, rules: RedactionRules, versions: Versions = {}): PlanView {
  return redactView(rawPlanView(publicUrl, row, [], versions), audience, rules);
}

/** The versions a plan links to (re-plan), as far as their hashes are needed. */
export interface Versions {
  supersedes?: Pick<PlanRow, "id" | "hash">;
  /** With the reviewer whose edit made it, when one did. */
  supersededBy?: Pick<PlanRow, "id" | "hash"> & { editedBy?: PersonAct | undefined };
  /** An undo's plan it takes back, and the undo that took a plan back. */
  undoes?: Pick<PlanRow, "id" | "hash">;
  undoneBy?: Pick<PlanRow, "id" | "hash">;
}

/** Reads the linked versions' hashes: one read, and only for a plan that has any. */
async function versionsOf(db: Queryable, row: PlanRow): Promise<Versions> {
  const ids = [row.supersedes, row.supersededBy, row.undoes, row.undoneBy].filter((id): id is string => id !== null);
  if (ids.length === 0) return {};
  const linked = await db
    .select({ id: plans.id, hash: plans.hash, editedBy: sql<string | null>`(${plans.document}::jsonb -> 'editedBy')::text` })
    .from(plans)
    .where(inArray(plans.id, ids));
  const found = (id: string | null) => linked.find((l) => l.id === id);
  const find = (id: string | null) => {
    const l = found(id);
    return l && { id: l.id, hash: l.hash };
  };
  const supersedes = find(row.supersedes);
  const newer = found(row.supersededBy);
  const supersededBy = newer && { id: newer.id, hash: newer.hash, ...(newer.editedBy ? { editedBy: JSON.parse(newer.editedBy) as PersonAct } : {}) };
  const undoes = find(row.undoes);
  const undoneBy = find(row.undoneBy);
  return {
    ...(supersedes ? { supersedes } : {}),
    ...(supersededBy ? { supersededBy } : {}),
    ...(undoes ? { undoes } : {}),
    ...(undoneBy ? { undoneBy } : {}),
  };
}

function redactView(view: PlanView, audience: Audience, rules: RedactionRules): PlanView {
  const actions = view.preview.actions.map((a) => ({
    ...a,
    before: a.before === null ? null : redactJson(a.before, rules),
    after: a.after === null ? null : redactJson(a.after, rules),
    changes: a.changes.map((c) => redactChange(c, rules)),
  }));
  const outcome = view.outcome && {
    ...view.outcome,
    ...(view.outcome.reason !== undefined ? { reason: redactText(view.outcome.reason) } : {}),
    actions: view.outcome.actions.map((a) => ({
      ...a,
      ...(a.detail !== undefined ? { detail: redactText(a.detail) } : {}),
      ...(a.changedSincePreview ? { changedSincePreview: a.changedSincePreview.map((c) => redactChange(c as Change, rules)) } : {}),
      ...(a.driftAfterApply ? { driftAfterApply: a.driftAfterApply.map((d) => redactMismatch(d, rules)) } : {}),
    })),
  };
  const plan = audience === "agent" ? view.plan : { ...view.plan, actions: view.plan.actions.map(redactPlanned(rules)) };
  const redacted: PlanView = { ...view, plan, preview: { actions }, ...(outcome ? { outcome } : {}) };
  // This is the one place bidi controls are neutralized: every reviewer display (Slack messages,
  // browser pages and streams) reads a plan through this view, and the agent's view must keep its
  // own text exactly (it recomputes the hash from it).
  return audience === "reviewer" ? (neutralizeBidiJson(redacted as unknown as Json) as unknown as PlanView) : redacted;
}

/** A field that did not land as previewed, masked by the rule a change's from/to are. */
function redactMismatch(d: AfterApplyMismatch, rules: RedactionRules): AfterApplyMismatch {
  const { path, from, to } = redactChange(
    { path: d.path, ...(d.expected !== undefined ? { from: d.expected } : {}), ...(d.actual !== undefined ? { to: d.actual } : {}) },
    rules,
  );
  return { path, ...(from !== undefined ? { expected: from } : {}), ...(to !== undefined ? { actual: to } : {}) };
}

function rawPlanView(publicUrl: string, row: PlanRow, votes: (typeof decisions.$inferSelect)[], versions: Versions): PlanView {
  const link = (v: Pick<PlanRow, "id" | "hash"> & { editedBy?: PersonAct | undefined }) => ({
    id: v.id,
    hash: v.hash,
    reviewUrl: `${publicUrl}/plans/${v.id}`,
    ...(v.editedBy ? { editedBy: v.editedBy } : {}),
  });
  const approvals = votes
    .filter((v) => v.verdict === "approve")
    .map((v) => ({
      userId: v.userId,
      via: v.via,
      at: v.decidedAt.toISOString(),
      ...(v.forUser ? { for: v.forUser } : {}),
      ...(v.recheckFailed ? { recheckFailed: v.recheckFailed } : {}),
    }));
  const reject = row.status === "rejected" ? votes.find((v) => v.verdict === "reject") : undefined;
  return {
    id: row.id,
    hash: row.hash,
    status: row.status,
    expiresAt: row.expiresAt.toISOString(),
    reviewUrl: `${publicUrl}/plans/${row.id}`,
    createdAt: row.createdAt.toISOString(),
    plan: row.document as PlanDocument,
    preview: row.preview as { actions: ActionPreview[] },
    approvals,
    ...(row.grantExpiresAt ? { grantExpiresAt: row.grantExpiresAt.toISOString() } : {}),
    ...(row.outcome ? { outcome: row.outcome as Outcome } : {}),
    ...(reject
      ? {
          rejection: {
            userId: reject.userId,
            via: reject.via,
            reason: reject.reason ?? "",
            at: reject.decidedAt.toISOString(),
            ...(reject.forUser ? { for: reject.forUser } : {}),
          },
        }
      : {}),
    ...(versions.supersedes ? { supersedes: link(versions.supersedes) } : {}),
    ...(versions.supersededBy ? { supersededBy: link(versions.supersededBy) } : {}),
    ...(versions.undoes ? { undoes: link(versions.undoes) } : {}),
    ...(versions.undoneBy ? { undoneBy: link(versions.undoneBy) } : {}),
  };
}
