import { asc, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { recordPlanEvent, transitionLocked } from "../../../src/service/lifecycle/transition.ts";
import { auditEvents, decisions, outbox, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * A write and the event that records it go out as one statement (recordPlanEvent's `records`,
 * transitionLocked): what each must keep from a write and an event sent apart is the event's
 * place in the chain, the outbox rows, and that a write which touches no row leaves nothing.
 */
describe.each(databaseKinds)("a write and its event in one statement on $name", (kind) => {
  const h = useHarness(kind, { sinks: ["slack"] });
  const actor = { type: "user", userId: "U0ALICE", via: "web" } as const;
  let seq = 0;

  async function newPlan() {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `one statement plan ${++seq}` }) });
    return plan;
  }

  /** The plan's row as a decision reads it under the lock. */
  async function locked(tx: Parameters<Parameters<typeof h.database.db.transaction>[0]>[0], planId: string) {
    const [row] = await tx
      .select({ id: plans.id, status: plans.status, hash: plans.hash, callbackUrl: plans.callbackUrl, document: plans.document, expiresAt: plans.expiresAt })
      .from(plans)
      .where(eq(plans.id, planId))
      .for("update");
    return row!;
  }

  async function written(planId: string) {
    const events = await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id));
    const [row] = await h.database.db.select({ status: plans.status, grant: plans.grant }).from(plans).where(eq(plans.id, planId));
    return {
      events: events.map((e) => e.type),
      status: row?.status,
      grant: row?.grant,
      decisions: await h.database.db.$count(decisions, eq(decisions.planId, planId)),
      outbox: await h.database.db.$count(outbox, eq(outbox.planId, planId)),
    };
  }

  it("records the vote with its event and the approval with its UPDATE, in chain order, each event with its outbox rows", async () => {
    const { id } = await newPlan();
    const before = await written(id);
    const status = await h.database.db.transaction(async (tx) => {
      const plan = await locked(tx, id);
      const at = h.ctx.clock();
      const vote = tx
        .insert(decisions)
        .values({ planId: id, planHash: plan.hash, userId: actor.userId, via: actor.via, verdict: "approve", decidedAt: at, expiresAt: plan.expiresAt })
        .returning({ id: decisions.id });
      await recordPlanEvent(h.ctx, tx, plan, "decision.approve", actor, at, { approvals: 1 }, vote.getSQL());
      return transitionLocked(h.ctx, tx, plan, { transition: "approve", actor, set: { grant: "a.b.c" } });
    });

    expect(status).toBe("approved");
    const after = await written(id);
    expect(after.events).toEqual([...before.events, "decision.approve", "plan.approved"]);
    expect(after).toMatchObject({ status: "approved", grant: "a.b.c", decisions: 1 });
    // Each event brings the outbox row its one sink takes, as when it is recorded on its own.
    expect(after.outbox).toBe(before.outbox + 2);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.ok).toBe(true);
  });

  it("throws when the plan is not in a status the transition leaves, and the transaction leaves nothing behind", async () => {
    const { id } = await newPlan();
    await cancelPlan(h.ctx, { agent: h.agent, planId: id });
    const before = await written(id);
    expect(before.status).toBe("cancelled");

    const attempt = h.database.db.transaction(async (tx) => {
      const plan = await locked(tx, id);
      return transitionLocked(h.ctx, tx, plan, { transition: "approve", actor, set: { grant: "a.b.c" } });
    });

    await expect(attempt).rejects.toThrow(/plan\.approved event records touched no row/);
    expect(await written(id)).toEqual(before);
  });

  it("throws when the write an event records touches no row", async () => {
    const { id } = await newPlan();
    const before = await written(id);
    const attempt = h.database.db.transaction(async (tx) => {
      const plan = await locked(tx, id);
      const nothing = sql`UPDATE plans SET updated_at = now() WHERE false RETURNING id`;
      await recordPlanEvent(h.ctx, tx, plan, "decision.approve", actor, h.ctx.clock(), {}, nothing);
    });
    await expect(attempt).rejects.toThrow(/touched no row/);
    expect(await written(id)).toEqual(before);
  });
});
