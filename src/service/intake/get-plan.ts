import { and, eq } from "drizzle-orm";
import { isPlanId } from "../../plan/schema.ts";
import { plans } from "../../store/schema.ts";
import type { AgentIdentity } from "../agents/authenticate-agent.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { executorHold } from "../execution/executor-hold.ts";
import { pauseNow } from "../operations/pause.ts";
import { planView, type PlanView } from "../lifecycle/plan-view.ts";
import type { PlanRow } from "../lifecycle/transition.ts";

/**
 * A plan as its own agent sees it. Another agent's plan is indistinguishable from none. An
 * approved plan waiting while Countersign is paused, while the executors asking for work cannot
 * verify its grant, or while no executor is connected, says so (`held`), so an agent polling or
 * waiting knows why nothing happens.
 */
export async function getPlan(ctx: ServiceContext, input: AgentPlanInput): Promise<PlanView> {
  const row = await ownPlanRow(ctx, input);
  const view = await planView(ctx.database.db, ctx.config.publicUrl, row, "agent", ctx.redaction);
  if (view.status !== "approved") return view;
  const paused = await pauseNow(ctx);
  if (paused) return { ...view, held: { by: "pause", reason: paused.reason, since: paused.since } };
  const held = await executorHold(ctx, row);
  return held ? { ...view, held } : view;
}

/** Which plan an agent asks about, for every verb an agent runs on one of its own plans. */
export interface AgentPlanInput {
  agent: AgentIdentity;
  planId: string;
}

export async function ownPlanRow(ctx: Pick<ServiceContext, "database">, { agent, planId }: AgentPlanInput): Promise<PlanRow> {
  const notFound = new ServiceError("not_found", `there is no plan ${planId} for agent '${agent.name}'`);
  if (!isPlanId(planId)) throw notFound;
  const [row] = await ctx.database.db
    .select()
    .from(plans)
    .where(and(eq(plans.id, planId), eq(plans.agentId, agent.id)));
  if (!row) throw notFound;
  return row;
}
