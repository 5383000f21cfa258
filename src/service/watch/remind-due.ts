import { and, eq, gt, lte, sql } from "drizzle-orm";
import { approverGroups, isUserGroup } from "../../policy/approvers.ts";
import { whyMayNot } from "../../policy/may-act.ts";
import { requestersOf } from "../../plan/requesters.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import type { Tx } from "../../store/db.ts";
import { decisions, planReminders, plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { recordPlanEvent } from "../lifecycle/transition.ts";
import { statusIs } from "../../store/plan-status-sql.ts";
import { delegatesOf } from "../access/delegations-held.ts";

/** The reminder points (seconds before expiry) a plan gets: its first target's policy, or the defaults. */
function pointsOf(ctx: ServiceContext, doc: PlanDocument): readonly number[] {
  return ctx.config.targets[doc.actions[0]!.target]?.policy?.reminders ?? ctx.config.defaults.reminders;
}

/**
 * Every configured point, by the target whose plans get it: each target's own list (or the
 * defaults), and the defaults under target null for a plan whose target is no longer configured.
 */
export function reminderPoints(config: ServiceContext["config"]): { target: string | null; seconds: number }[] {
  return [
    ...Object.entries(config.targets).flatMap(([target, t]) => (t.policy?.reminders ?? config.defaults.reminders).map((seconds) => ({ target, seconds }))),
    ...config.defaults.reminders.map((seconds) => ({ target: null, seconds })),
  ];
}

/**
 * Pending plans that have reached one of their points not yet recorded for them. The whole
 * test is SQL: only plans expiring within the largest point are read (an index range over
 * pending plans' expiry), and of those only the ones whose first target's point has come and
 * has no plan_reminders row, so a sweep costs the plans that are due, not every pending one.
 */
export async function reminderCandidates(ctx: ServiceContext, points: readonly { target: string | null; seconds: number }[], now: Date) {
  if (points.length === 0) return [];
  const horizon = new Date(now.getTime() + Math.max(...points.map((p) => p.seconds)) * 1000);
  const target = sql`(${plans.document}::json #>> '{actions,0,target}')`;
  const names = [...new Set(points.flatMap((p) => (p.target === null ? [] : [p.target])))];
  const unconfigured =
    names.length > 0
      ? sql`${target} NOT IN (${sql.join(
          names.map((n) => sql`${n}`),
          sql`, `,
        )})`
      : sql`true`;
  const reached = sql`EXISTS (SELECT 1 FROM (VALUES ${sql.join(
    points.map((p) => sql`(${p.target}::text, ${p.seconds}::integer)`),
    sql`, `,
  )}) AS point(target, seconds)
    WHERE (point.target = ${target} OR (point.target IS NULL AND ${unconfigured}))
      AND ${plans.expiresAt} <= ${now.toISOString()}::timestamptz + point.seconds * interval '1 second'
      AND NOT EXISTS (SELECT 1 FROM ${planReminders} sent WHERE sent.plan_id = ${plans.id} AND sent.seconds_before = point.seconds))`;
  return ctx.database.db
    .select({ id: plans.id, document: plans.document, expiresAt: plans.expiresAt })
    .from(plans)
    .where(and(statusIs("pending"), gt(plans.expiresAt, now), lte(plans.expiresAt, horizon), reached));
}

/**
 * Sends the reminders that are due: for each pending plan, each configured point (seconds
 * before expiry, from its first target's policy or the defaults) that has been reached gets one
 * `plan.reminder` event, naming who could still decide. Recording the point is a unique insert,
 * so replicas never remind twice; decided plans are no longer pending, so reminders stop.
 * With no point configured anywhere (the default) it reads nothing at all.
 */
export async function remindDue(ctx: ServiceContext): Promise<number> {
  const configured = reminderPoints(ctx.config);
  if (configured.length === 0) return 0;
  const now = ctx.clock();
  const candidates = await reminderCandidates(ctx, configured, now);
  let sent = 0;
  for (const plan of candidates) {
    const doc = plan.document as PlanDocument;
    const points = pointsOf(ctx, doc);
    const secondsLeft = (plan.expiresAt.getTime() - now.getTime()) / 1000;
    const due = points
      .filter((p) => secondsLeft <= p)
      .sort((a, b) => a - b)
      .slice(0, 1); // only the nearest, not a burst of stale ones
    for (const point of due) {
      await ctx.database.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(plans)
          .where(and(eq(plans.id, plan.id), eq(plans.status, "pending")))
          .for("update");
        if (!row) return;
        const inserted = await tx
          .insert(planReminders)
          .values(points.filter((p) => p >= point).map((p) => ({ planId: plan.id, secondsBefore: p, sentAt: now })))
          .onConflictDoNothing()
          .returning();
        if (!inserted.some((r) => r.secondsBefore === point)) return;
        const votes = await tx
          .select({ userId: decisions.userId, for: decisions.forUser })
          .from(decisions)
          .where(and(eq(decisions.planId, plan.id), eq(decisions.verdict, "approve")));
        const approved = votes.map((d) => d.userId);
        // Who could still decide, by the same rule as their buttons; a group's members are not
        // listed (Slack would be asked for every reminder), the group is named instead.
        const facts = {
          status: row.status,
          expiresAt: row.expiresAt,
          hash: row.hash,
          requesters: requestersOf(doc),
          policy: doc.policy,
          approvals: approved,
          actedFor: votes.flatMap((v) => (v.for ? [v.for] : [])),
        };
        const people = doc.policy.approvers.filter(
          (a) => !isUserGroup(a) && whyMayNot({ userId: a, memberOf: [] }, facts, { verb: "decide" }, now) === undefined,
        );
        // Someone away is reached through whoever decides in their place.
        const { missing: reached, delegated } = await inTheirPlace(tx, doc, people, now);
        const missing = [...reached, ...approverGroups(doc.policy)];
        await recordPlanEvent(ctx, tx, row, "plan.reminder", { type: "system", process: "reminders" }, now, {
          secondsBefore: point,
          missing,
          ...(delegated.length > 0 ? { delegated } : {}),
          approvals: approved.length,
          requiredApprovals: doc.policy.requiredApprovals,
          // Nobody has picked up a high-risk plan: worth telling more people than the thread.
          escalate: doc.policy.risk?.level === "high" && approved.length === 0,
        });
        sent++;
      });
    }
  }
  return sent;
}

/**
 * Who a reminder reaches: each approver still needed, or in place of one who delegated their
 * approvals for the plan's targets, their delegates (`delegated` says for whom), unless the plan's
 * policy forbids delegates.
 */
async function inTheirPlace(tx: Tx, doc: PlanDocument, people: readonly string[], now: Date) {
  const delegates =
    doc.policy.delegation === false
      ? new Map<string, string[]>()
      : await delegatesOf(tx, { delegators: people, targets: doc.actions.map((a) => a.target), at: now });
  const delegated = people.flatMap((p) => (delegates.get(p) ?? []).map((d) => ({ userId: d, for: p })));
  const missing = [...new Set(people.flatMap((p) => delegates.get(p) ?? [p]))];
  return { missing, delegated };
}
