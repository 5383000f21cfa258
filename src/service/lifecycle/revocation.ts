import { and, asc, eq } from "drizzle-orm";
import { auditEvents } from "../../store/schema.ts";
import type { Queryable } from "../../store/db.ts";
import type { PlanView, Revocation } from "../../contract/agent-api.ts";
import type { Actor } from "../../contract/agent-api.ts";

/**
 * Who revoked a plan, when and why, read from its `plan.revoked` event: the one record of it
 * (the plan row keeps no copy). Read only for a revoked plan, by the audit log's plan index.
 */
export async function revocationOf(db: Queryable, planId: string): Promise<Revocation | undefined> {
  const [event] = await db
    .select({ actor: auditEvents.actor, data: auditEvents.data, at: auditEvents.at })
    .from(auditEvents)
    .where(and(eq(auditEvents.planId, planId), eq(auditEvents.type, "plan.revoked")))
    .orderBy(asc(auditEvents.id))
    .limit(1);
  if (!event) return undefined;
  const actor = event.actor as Actor;
  const person =
    actor.type === "user" ? { userId: actor.userId, via: actor.via, ...(actor.for ? { for: actor.for } : {}) } : { userId: "", via: "web" as const };
  return { ...person, reason: String((event.data as { reason?: unknown }).reason ?? ""), at: event.at.toISOString() };
}

/** A plan's view with who revoked it and why, when it is revoked. */
export async function withRevocation(db: Queryable, row: { id: string; status: string }, view: Promise<PlanView> | PlanView): Promise<PlanView> {
  const revocation = row.status === "revoked" ? await revocationOf(db, row.id) : undefined;
  return revocation ? { ...(await view), revocation } : view;
}
