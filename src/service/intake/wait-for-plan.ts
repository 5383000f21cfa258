import { isOpen } from "../../plan/lifecycle.ts";
import type { ServiceContext } from "../context.ts";
import { getPlan, type AgentPlanInput } from "./get-plan.ts";
import type { PlanView } from "../lifecycle/plan-view.ts";

export const MAX_WAIT_SECONDS = 60;
/** Waiters re-read on this period even without a signal, in case a notification was lost. */
const RECHECK_MS = 1000;

export interface WaitForPlanInput extends AgentPlanInput {
  timeoutMs: number;
  /** Stop waiting and answer with the plan as it stands: the caller went away, or the server is stopping. */
  signal?: AbortSignal | undefined;
}

/**
 * Long-poll: returns as soon as the plan reaches a final status, or as it is when time runs out.
 * How long the caller has waited is elapsed time, not the time of day, so it is measured on the
 * monotonic timer: ctx.clock is the time the plan's rules are judged at, and a test may hold it still.
 */
export async function waitForPlan(ctx: ServiceContext, input: WaitForPlanInput): Promise<PlanView> {
  const { planId, timeoutMs, signal } = input;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    // Armed before the read, so a change committed after the read's snapshot still wakes it.
    const armed = new AbortController();
    const disarm = () => armed.abort();
    signal?.addEventListener("abort", disarm);
    try {
      const woken = ctx.signals.wait(planId, Math.min(deadline - performance.now(), RECHECK_MS), armed.signal);
      const plan = await getPlan(ctx, input);
      if (!isOpen(plan.status) || deadline - performance.now() <= 0 || signal?.aborted) return plan;
      await woken;
    } finally {
      signal?.removeEventListener("abort", disarm);
      disarm();
    }
  }
}
