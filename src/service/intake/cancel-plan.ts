import { hasExpired } from "../../plan/lifecycle.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { ownPlanRow, type AgentPlanInput } from "./get-plan.ts";
import { planView, type PlanView } from "../lifecycle/plan-view.ts";
import { transition } from "../lifecycle/transition.ts";

/** The agent withdraws its own pending plan. Once anyone has decided, it is too late. */
export async function cancelPlan(ctx: ServiceContext, input: AgentPlanInput): Promise<PlanView> {
  const { agent, planId } = input;
  const plan = await ownPlanRow(ctx, input);
  if (hasExpired(plan, ctx.clock())) {
    throw new ServiceError("plan_expired", `plan ${planId} expired at ${plan.expiresAt.toISOString()}; there is nothing left to cancel`, {
      details: { expiresAt: plan.expiresAt.toISOString() },
    });
  }
  const row = await ctx.database.db.transaction((tx) =>
    transition(ctx, tx, { planId, transition: "cancel", actor: { type: "agent", agentId: agent.id, name: agent.name } }),
  );
  if (!row) {
    const current = await ownPlanRow(ctx, input);
    throw new ServiceError("already_decided", `plan ${planId} is already ${current.status}; only a pending plan can be cancelled`, {
      details: { status: current.status },
    });
  }
  return planView(ctx.database.db, ctx.config.publicUrl, row, "agent", ctx.redaction);
}
