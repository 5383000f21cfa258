import { asc, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../src/service/cancel-plan.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import { isTransitionMissed, planEventStatement, transitionLocked, transitionsLocked } from "../../src/service/transition.ts";
import { auditEvents, plans } from "../../src/store/schema.ts";
import { databaseKinds } from "../support/databases.ts";
import { mergeRequest } from "../support/harness.ts";
import { useHarness } from "../support/use-harness.ts";

/**
 * transitionLocked's UPDATE and event go out with the caller's statements and the COMMIT
 * (decide's approval at quorum, Database.transactionEndingWith). What it must keep from
 * transition(): the statements run in the order sent, and an UPDATE that misses leaves nothing behind.
 */
describe.each(databaseKinds)("transitionLocked on $name", (kind) => {
  const h = useHarness(kind);
  let seq = 0;

  async function lockedPlan(planId: string) {
    return h.database.db.transaction(async (tx) => {
      const [plan] = await tx
        .select({ id: plans.id, status: plans.status, hash: plans.hash, callbackUrl: plans.callbackUrl, document: plans.document })
        .from(plans)
        .where(eq(plans.id, planId))
        .for("update");
      return plan!;
    });
  }

  async function eventsOf(planId: string) {
    return (await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map((e) => e.type);
  }

  const newPlan = async () => (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `transitionLocked plan ${++seq}` }) })).plan;
  const actor = { type: "user", userId: "U0ALICE", via: "web" } as const;

  it("runs the caller's statements before the event, in one transaction with the UPDATE", async () => {
    const { id } = await newPlan();
    const plan = await lockedPlan(id);
    const status = await h.database.transactionEndingWith(async (tx) => {
      const before = planEventStatement(h.ctx, tx, { plan, type: "decision.approve", actor, at: h.ctx.clock(), data: {} });
      const { to, statements } = transitionLocked(h.ctx, tx, plan, { transition: "approve", actor });
      return { result: to, last: [before, ...statements] };
    }, { first: [sql`SELECT id FROM plans WHERE id = ${id} FOR UPDATE`] });
    expect(status).toBe("approved");
    expect(await eventsOf(id)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
    expect((await lockedPlan(id)).status).toBe("approved");
  });

  it("throws when the UPDATE misses (the plan was not in a status the transition leaves), and the event and the caller's statements roll back", async () => {
    const { id } = await newPlan();
    const pending = await lockedPlan(id);
    await cancelPlan(h.ctx, { agent: h.agent, planId: id });
    const err = await h.database
      .transactionEndingWith(async (tx) => {
        const before = planEventStatement(h.ctx, tx, { plan: pending, type: "decision.approve", actor, at: h.ctx.clock(), data: {} });
        const { to, statements } = transitionLocked(h.ctx, tx, pending, { transition: "approve", actor });
        return { result: to, last: [before, ...statements] };
      })
      .then(() => undefined, (e: unknown) => e as Error);
    expect(String((err?.cause as Error | undefined)?.message)).toContain(`plan ${id} was not pending under its row lock: the approve transition missed (0 rows)`);
    // Recognised as this transition's miss (decide retries a hand-off on a claim's), not another's.
    expect(isTransitionMissed(err, "approve")).toBe(true);
    expect(isTransitionMissed(err, "claim")).toBe(false);
    expect(isTransitionMissed(new Error("the approve transition"), "approve")).toBe(false);
    expect(await eventsOf(id)).toEqual(["plan.submitted", "plan.cancelled"]);
    expect((await lockedPlan(id)).status).toBe("cancelled");
  });

  it("transitionsLocked: approve then claim write the plan row once, each with its own event, in order", async () => {
    const { id } = await newPlan();
    const plan = await lockedPlan(id);
    const executor = { type: "system", process: "executor" } as const;
    const sent = await h.database.transactionEndingWith(async (tx) => {
      const { to, statements } = transitionsLocked(h.ctx, tx, plan, [
        { transition: "approve", actor, set: { grant: "grant-token" }, announce: "executing" },
        { transition: "claim", actor: executor, set: { claimToken: "claim-token", claims: sql`${plans.claims} + 1` }, data: { claim: 1 } },
      ]);
      return { result: { to, statements: statements.length }, last: statements };
    }, { first: [sql`SELECT id FROM plans WHERE id = ${id} FOR UPDATE`] });
    // One UPDATE and two events.
    expect(sent).toEqual({ to: "executing", statements: 3 });
    expect(await eventsOf(id)).toEqual(["plan.submitted", "plan.approved", "plan.executing"]);
    const [row] = await h.database.db.select({ status: plans.status, grant: plans.grant, claimToken: plans.claimToken, claims: plans.claims }).from(plans).where(eq(plans.id, id));
    expect(row).toEqual({ status: "executing", grant: "grant-token", claimToken: "claim-token", claims: 1 });
  });

  it("transitionsLocked: a step's guard that fails makes the whole UPDATE miss, recognised as each step's miss, and nothing is written", async () => {
    const { id } = await newPlan();
    const plan = await lockedPlan(id);
    const err = await h.database
      .transactionEndingWith(async (tx) => {
        const { to, statements } = transitionsLocked(h.ctx, tx, plan, [
          { transition: "approve", actor, set: { grant: "grant-token" } },
          { transition: "claim", actor: { type: "system", process: "executor" }, set: { claimToken: "claim-token" }, guard: sql`false` },
        ]);
        return { result: to, last: statements };
      })
      .then(() => undefined, (e: unknown) => e as Error);
    expect(isTransitionMissed(err, "claim")).toBe(true);
    expect(await eventsOf(id)).toEqual(["plan.submitted"]);
    expect((await lockedPlan(id)).status).toBe("pending");
    // A chain the lifecycle does not allow is refused before anything is sent.
    expect(() => transitionsLocked(h.ctx, h.database.db as never, plan, [{ transition: "approve", actor }, { transition: "approve", actor }])).toThrow(/approve cannot follow a transition to approved/);
  });
});
