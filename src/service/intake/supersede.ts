import { and, eq, gt, isNull } from "drizzle-orm";
import { isPlanId, type PersonAct } from "../../plan/schema.ts";
import { plans } from "../../store/schema.ts";
import type { Tx } from "../../store/db.ts";
import type { Actor } from "../../contract/agent-api.ts";
import type { AgentIdentity } from "../agents/authenticate-agent.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { recordPlanEvent, transition, type PlanRow } from "../lifecycle/transition.ts";

/**
 * Re-plan: a new version names the plan it replaces in `supersedes`. The old version
 * may be replaced while nothing has been done with it: pending, approved but not claimed by an
 * executor, or stale (its target moved; it stays stale and only gains `superseded_by`).
 */

/** The audit (and outbox) event of a stale plan gaining its newer version; not a status change, so no webhook. */
export const STALE_REPLACED_EVENT = "version.replaced";

/**
 * Reads the plan a submission wants to supersede and refuses early, before any target is read,
 * when it cannot be: the answer names why. The transaction checks again (supersedeIn).
 */
export async function supersedablePlan(ctx: Pick<ServiceContext, "database">, agent: AgentIdentity, planId: string): Promise<PlanRow> {
  const notFound = new ServiceError("not_found", `supersedes names plan ${planId}, but agent '${agent.name}' has no such plan`, {
    issues: [{ path: "/supersedes", message: "no plan of yours has this id" }],
  });
  if (!isPlanId(planId)) throw notFound;
  const [row] = await ctx.database.db
    .select()
    .from(plans)
    .where(and(eq(plans.id, planId), eq(plans.agentId, agent.id)));
  if (!row) throw notFound;
  const why = whyNotSupersedable(row);
  if (why) throw why;
  return row;
}

/** A reviewer's edit that makes the new version: who, the hash they edited, and the refusal when the old plan moved meanwhile. */
export interface SupersedingEdit {
  by: PersonAct;
  oldHash: string;
  /** Why the edit is refused, from the old plan as it is now (undefined: purged), read in the edit's transaction. */
  whyNot(now: PlanRow | undefined): Promise<ServiceError>;
}

/**
 * In the submitting transaction, after the new plan is stored: a pending or unclaimed approved
 * old plan becomes `superseded` (transition `supersede`, audited, its webhook and Slack update
 * queued); a stale one gains `superseded_by`. Either is one conditional UPDATE under the old
 * plan's row lock, so of two re-plans of one version, or a re-plan racing a claim, exactly one
 * wins; the loser gets the refusal and its transaction (its new plan too) rolls back. A
 * reviewer's edit replaces only a pending plan that has not expired, and its event records who
 * edited which hash into which.
 */
export async function supersedeIn(
  ctx: Pick<ServiceContext, "clock" | "sinks" | "config">,
  tx: Tx,
  input: { oldId: string; next: { id: string; hash: string }; actor: Actor; edit?: SupersedingEdit | undefined },
): Promise<void> {
  const { oldId, next, actor, edit } = input;
  const data = { supersededBy: next.id, hash: next.hash, ...(edit ? { editedBy: edit.by, oldHash: edit.oldHash } : {}) };
  const superseded = await transition(ctx, tx, {
    planId: oldId,
    transition: "supersede",
    actor,
    data,
    set: { supersededBy: next.id },
    guard: edit ? and(isNull(plans.supersededBy), eq(plans.status, "pending"), gt(plans.expiresAt, ctx.clock())) : isNull(plans.supersededBy),
  });
  if (superseded) return;
  if (edit) {
    const [now] = await tx.select().from(plans).where(eq(plans.id, oldId));
    throw await edit.whyNot(now);
  }
  const at = ctx.clock();
  const [stale] = await tx
    .update(plans)
    .set({ supersededBy: next.id, updatedAt: at })
    .where(and(eq(plans.id, oldId), eq(plans.status, "stale"), isNull(plans.supersededBy)))
    .returning();
  if (stale) {
    await recordPlanEvent(ctx, tx, stale, STALE_REPLACED_EVENT, actor, at, data);
    return;
  }
  // Someone got there first (another re-plan, a claim, a decision, the sweeper): say what.
  const [now] = await tx.select().from(plans).where(eq(plans.id, oldId));
  // A purge (retention) removed it meanwhile: there is nothing left to replace.
  if (!now) {
    throw new ServiceError("not_supersedable", `plan ${oldId} was removed (purged) while this version was stored; submit it without 'supersedes'`, {
      details: { planId: oldId },
      issues: [{ path: "/supersedes", message: "the plan no longer exists" }],
    });
  }
  throw whyNotSupersedable(now) ?? new ServiceError("conflict", `plan ${oldId} changed while this version was stored; retry`);
}

function whyNotSupersedable(row: PlanRow): ServiceError | undefined {
  const details = { planId: row.id, status: row.status, ...(row.supersededBy ? { supersededBy: row.supersededBy } : {}) };
  const issues = (message: string) => [{ path: "/supersedes", message }];
  if (row.supersededBy) {
    return new ServiceError("not_supersedable", `plan ${row.id} was already superseded by ${row.supersededBy}; re-plan from the newest version`, {
      details,
      issues: issues("already superseded"),
    });
  }
  switch (row.status) {
    case "pending":
    case "approved":
    case "stale":
      return undefined;
    case "executing":
      return new ServiceError(
        "not_supersedable",
        `plan ${row.id} was already claimed by an executor (executing); it can no longer be replaced, wait for its outcome`,
        { details, issues: issues("claimed by an executor") },
      );
    default:
      return new ServiceError(
        "not_supersedable",
        `plan ${row.id} is ${row.status}, which is final; only a pending, approved (not yet claimed) or stale plan can be superseded`,
        { details, issues: issues(`plan is ${row.status}`) },
      );
  }
}
