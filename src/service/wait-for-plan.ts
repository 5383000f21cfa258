import { isOpen } from "../plan/lifecycle.ts";
import type { AgentIdentity } from "./authenticate-agent.ts";
import type { ServiceContext } from "./context.ts";
import { getPlan } from "./get-plan.ts";
import type { PlanView } from "./plan-view.ts";

export const MAX_WAIT_SECONDS = 60;
/** Waiters re-read on this period even without a signal, in case a notification was lost. */
const RECHECK_MS = 1000;

/** Long-poll: returns as soon as the plan reaches a final status, or as it is when time runs out. */
export async function waitForPlan(ctx: ServiceContext, agent: AgentIdentity, planId: string, timeoutMs: number, signal?: AbortSignal): Promise<PlanView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const plan = await getPlan(ctx, agent, planId);
    const left = deadline - Date.now();
    if (!isOpen(plan.status) || left <= 0 || signal?.aborted) return plan;
    await ctx.signals.wait(planId, Math.min(left, RECHECK_MS), signal);
  }
}
