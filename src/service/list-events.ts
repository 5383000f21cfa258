import { asc, eq } from "drizzle-orm";
import { auditEvents } from "../store/schema.ts";
import type { AgentIdentity } from "./authenticate-agent.ts";
import type { ServiceContext } from "./context.ts";
import { ownPlanRow } from "./get-plan.ts";

export interface AuditEventView {
  id: number;
  type: string;
  actor: unknown;
  data: unknown;
  at: string;
  hash: string;
}

/** A plan's audit trail, oldest first. */
export async function listPlanEvents(ctx: ServiceContext, agent: AgentIdentity, planId: string): Promise<AuditEventView[]> {
  await ownPlanRow(ctx, agent, planId);
  const rows = await ctx.database.db.select().from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id));
  return rows.map((e) => ({ id: e.id, type: e.type, actor: e.actor, data: e.data, at: e.at.toISOString(), hash: e.hash }));
}
