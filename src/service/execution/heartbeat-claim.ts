import { and, eq } from "drizzle-orm";
import { plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { executorSeen } from "./executor-presence.ts";

/** Extends the lease of the executor holding `claimToken`; a superseded token is refused. The executor counts as connected either way. */
export async function heartbeatClaim(
  ctx: ServiceContext,
  { claimToken, executor }: { claimToken: string; executor?: string | undefined },
): Promise<{ leaseExpiresAt: string }> {
  await executorSeen(ctx, executor);
  const leaseExpiresAt = new Date(ctx.clock().getTime() + ctx.config.executor.leaseSeconds * 1000);
  const [row] = await ctx.database.db
    .update(plans)
    .set({ leaseExpiresAt })
    .where(and(eq(plans.claimToken, claimToken), eq(plans.status, "executing")))
    .returning({ id: plans.id });
  if (!row) throw leaseLost();
  return { leaseExpiresAt: leaseExpiresAt.toISOString() };
}

export function leaseLost(): ServiceError {
  return new ServiceError(
    "lease_lost",
    "this claim is no longer current: its lease ran out and another executor took the plan over, or it was already reported",
  );
}
