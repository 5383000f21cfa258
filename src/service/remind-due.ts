import { and, eq, gt } from "drizzle-orm";
import { approverGroups, isUserGroup } from "../policy/approvers.ts";
import { whyMayNot } from "../policy/may-act.ts";
import type { PlanDocument } from "../plan/schema.ts";
import { decisions, planReminders, plans } from "../store/schema.ts";
import type { ServiceContext } from "./context.ts";
import { recordPlanEvent } from "./transition.ts";

/**
 * Sends the reminders that are due: for each pending plan, each configured point (seconds
 * before expiry, from its first target's policy or the defaults) that has been reached gets one
 * `plan.reminder` event, naming who could still decide. Recording the point is a unique insert,
 * so replicas never remind twice; decided plans are no longer pending, so reminders stop.
 */
export async function remindDue(ctx: ServiceContext): Promise<number> {
  const now = ctx.clock();
  const pending = await ctx.database.db
    .select({ id: plans.id, document: plans.document, expiresAt: plans.expiresAt })
    .from(plans)
    .where(and(eq(plans.status, "pending"), gt(plans.expiresAt, now)));
  let sent = 0;
  for (const plan of pending) {
    const doc = plan.document as PlanDocument;
    const points = ctx.config.targets[doc.actions[0]!.target]?.policy?.reminders ?? ctx.config.defaults.reminders;
    const secondsLeft = (plan.expiresAt.getTime() - now.getTime()) / 1000;
    const due = points.filter((p) => secondsLeft <= p).sort((a, b) => a - b).slice(0, 1); // only the nearest, not a burst of stale ones
    for (const point of due) {
      await ctx.database.db.transaction(async (tx) => {
        const [row] = await tx.select().from(plans).where(and(eq(plans.id, plan.id), eq(plans.status, "pending"))).for("update");
        if (!row) return;
        const inserted = await tx.insert(planReminders).values(points.filter((p) => p >= point).map((p) => ({ planId: plan.id, secondsBefore: p, sentAt: now }))).onConflictDoNothing().returning();
        if (!inserted.some((r) => r.secondsBefore === point)) return;
        const approved = (await tx.select({ userId: decisions.userId }).from(decisions).where(and(eq(decisions.planId, plan.id), eq(decisions.verdict, "approve")))).map((d) => d.userId);
        // Who could still decide, by the same rule as their buttons; a group's members are not
        // listed (Slack would be asked for every reminder), the group is named instead.
        const facts = { status: row.status, expiresAt: row.expiresAt, hash: row.hash, onBehalfOf: doc.onBehalfOf, policy: doc.policy, approvals: approved };
        const missing = [
          ...doc.policy.approvers.filter((a) => !isUserGroup(a) && whyMayNot({ userId: a, memberOf: [] }, facts, { verb: "decide" }, now) === undefined),
          ...approverGroups(doc.policy),
        ];
        await recordPlanEvent(ctx, tx, row, "plan.reminder", { type: "system", process: "reminders" }, now, {
          secondsBefore: point,
          missing,
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
