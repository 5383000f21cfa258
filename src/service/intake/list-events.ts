import { asc, eq } from "drizzle-orm";
import { auditEvents } from "../../store/schema.ts";
import type { Actor, AuditEvent } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { ownPlanRow, type AgentPlanInput } from "./get-plan.ts";

/** An audit event as the agent API shows it (the wire contract's AuditEvent). */
export type AuditEventView = AuditEvent;

/** A plan's audit trail, oldest first. */
export async function listPlanEvents(ctx: ServiceContext, input: AgentPlanInput): Promise<AuditEventView[]> {
  await ownPlanRow(ctx, input);
  const rows = await ctx.database.db.select().from(auditEvents).where(eq(auditEvents.planId, input.planId)).orderBy(asc(auditEvents.id));
  // The columns hold what appendAudit wrote: an Actor, and an object of event data.
  return rows.map((e) => ({ id: e.id, type: e.type, actor: e.actor as Actor, data: e.data as AuditEvent["data"], at: e.at.toISOString(), hash: e.hash }));
}
