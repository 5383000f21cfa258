import type { Hold } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { executorPresence, missingAfterMs } from "./executor-presence.ts";
import { claimsWaitingHere, grantKeyHold } from "./executors-seen.ts";

type ExecutorHold = Extract<Hold, { by: "grant_key_mismatch" | "no_executor" }>;

/**
 * Why the executors are not applying an approved plan, if they are not: none of those asking
 * this replica can verify its grant, or none is connected at all (executor-presence.ts). The
 * pause, which holds every plan, is the caller's to check first.
 */
export async function executorHold(
  ctx: Pick<ServiceContext, "database" | "clock" | "config">,
  plan: { grant: string | null; updatedAt: Date },
): Promise<ExecutorHold | undefined> {
  const mismatch = grantKeyHold(ctx, plan);
  if (mismatch) return mismatch;
  if (claimsWaitingHere(ctx.database) > 0) return undefined;
  const { connected, lastSeenAt } = await executorPresence(ctx);
  if (connected > 0) return undefined;
  const seconds = missingAfterMs(ctx.config) / 1000;
  return {
    by: "no_executor",
    reason: lastSeenAt
      ? `no executor is connected: none has asked for work since ${lastSeenAt.toISOString()} (over ${seconds} s ago), so nobody applies this plan; it waits for one, until its grant expires`
      : "no executor is connected: none has asked this server for work yet, so nobody applies this plan; it waits for one, until its grant expires",
    since: new Date(Math.max(plan.updatedAt.getTime(), lastSeenAt?.getTime() ?? 0)).toISOString(),
    lastSeenAt: lastSeenAt?.toISOString() ?? null,
  };
}
