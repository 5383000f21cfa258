import { asc, eq } from "drizzle-orm";
import type { ServiceContext } from "../../src/service/context.ts";
import { decide } from "../../src/service/decide/decide.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { auditEvents, plans } from "../../src/store/schema.ts";
import type { TestDatabaseKind } from "./databases.ts";
import { mergeRequest } from "./harness.ts";
import { useHarness } from "./use-harness.ts";

/**
 * The suite the plan lifecycle files share (intake's cancel, wait and reads, watch's expiry,
 * delivery's outbox): a harness on a database of `kind`, and the plans, decisions and reads
 * their tests make.
 */
export function usePlanLifecycle(kind: TestDatabaseKind) {
  /** Quorum 1, every plan event also goes to the "test" outbox sink. */
  const h = useHarness(kind, { sinks: ["test"] });
  let seq = 0;

  async function newPlan(overrides: Record<string, unknown> = {}, ctx: ServiceContext = h.ctx): Promise<PlanView> {
    const { plan } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `lifecycle plan ${++seq}`, ...overrides }) });
    return plan;
  }
  const statusOf = async (planId: string) => (await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, planId)))[0]?.status;
  const eventTypes = async (planId: string) =>
    (await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map(
      (e) => e.type,
    );
  const approveAs = (plan: PlanView, userId: string) => decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "web" }, verdict: "approve" });
  const rejectAs = (plan: PlanView, userId: string, reason: string) =>
    decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "web" }, verdict: "reject", reason });

  return { h, newPlan, statusOf, eventTypes, approveAs, rejectAs };
}
