import { eq } from "drizzle-orm";
import { agents, plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { planView, type PlanView } from "../lifecycle/plan-view.ts";

/** Where a plan's status changes are posted, signed with whose secret, and the plan as its agent sees it. */
export interface PlanWebhook {
  callbackUrl: string;
  /** The submitting agent's webhook secret; null for agents made before webhooks existed. */
  secret: string | null;
  view: PlanView;
}

/** The webhook of a plan, or undefined when the plan (or its callback URL) does not exist. */
export async function webhookOfPlan(ctx: ServiceContext, planId: string): Promise<PlanWebhook | undefined> {
  const [row] = await ctx.database.db.select().from(plans).where(eq(plans.id, planId));
  if (!row?.callbackUrl) return undefined;
  const [agent] = await ctx.database.db.select({ secret: agents.webhookSecret }).from(agents).where(eq(agents.id, row.agentId));
  return {
    callbackUrl: row.callbackUrl,
    secret: agent?.secret ?? null,
    view: await planView(ctx.database.db, ctx.config.publicUrl, row, "agent", ctx.redaction),
  };
}
