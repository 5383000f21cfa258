import { asc, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { planChainTail, planGenesis } from "../../../src/service/records/audit.ts";
import { lockedWritesStatement, type LockedEvent, type LockedWrites } from "../../../src/service/lifecycle/locked-writes.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { isTransitionMissed, transitionsLocked } from "../../../src/service/lifecycle/transition.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { auditEvents, decisions, outbox, pause, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * What a decision writes under its plan's row lock goes out as one statement with the COMMIT
 * (decide, Database.transactionEndingWith): transitionsLocked makes the UPDATE and the events,
 * lockedWritesStatement the statement. What it must keep from transition(): the events in order,
 * chained as audit verify checks them, and an UPDATE that misses leaves nothing behind.
 */
describe.each(databaseKinds)("locked writes on $name", (kind) => {
  const h = useHarness(kind);
  let seq = 0;

  const newPlan = async () => (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `locked writes plan ${++seq}` }) })).plan;
  const actor = { type: "user", userId: "U0ALICE", via: "web" } as const;

  async function eventsOf(planId: string) {
    return (await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map(
      (e) => e.type,
    );
  }

  async function planRow(planId: string) {
    const [row] = await h.database.db
      .select({
        id: plans.id,
        status: plans.status,
        hash: plans.hash,
        callbackUrl: plans.callbackUrl,
        document: plans.document,
        grant: plans.grant,
        claimToken: plans.claimToken,
        claims: plans.claims,
      })
      .from(plans)
      .where(eq(plans.id, planId));
    return row!;
  }

  /** Locks the plan, reads its chain's tail as decide does, and sends `writes` with the COMMIT. */
  async function writeLocked(
    plan: Awaited<ReturnType<typeof planRow>>,
    writes: (tail: string) => Omit<LockedWrites, "announce">,
    announce: string,
    sinks = h.ctx.sinks,
  ) {
    return h.database.transactionEndingWith(
      async (_tx, read) => {
        const tail = String(read[1]![0]?.hash ?? planGenesis(plan.id));
        return { result: tail, last: lockedWritesStatement({ ...h.ctx, sinks }, { ...plan, tail }, { ...writes(tail), announce }) };
      },
      { first: [sql`SELECT id FROM plans WHERE id = ${plan.id} FOR UPDATE`, planChainTail(plan.id)] },
    );
  }

  const vote = (status: "pending"): LockedEvent => ({ type: "decision.approve", status, actor, at: h.ctx.clock(), data: { approvals: 1 } });
  const decision = (hash: string) => ({
    planHash: hash,
    userId: actor.userId,
    via: actor.via,
    verdict: "approve" as const,
    reason: null,
    recheckFailed: null,
    decidedAt: h.ctx.clock(),
    expiresAt: new Date(h.ctx.clock().getTime() + 60_000),
  });

  it("writes the decision, the UPDATE and the events in order, chained from the plan's tail as audit verify checks them, with one outbox row per sink and event, the App Home's one for them all", async () => {
    const { id } = await newPlan();
    const plan = await planRow(id);
    const outboxBefore = (await h.database.db.select({ id: outbox.id }).from(outbox).where(eq(outbox.planId, id))).length;
    const tail = await writeLocked(
      plan,
      () => {
        const { update, events } = transitionsLocked(plan, [{ transition: "approve", actor, set: { grant: "grant-token" } }], h.ctx.clock());
        return { decision: decision(plan.hash), update, events: [vote("pending"), ...events] };
      },
      "approved",
      ["slack", "slack_home", "webhook"],
    );
    // The tail read is the submitted event's hash, not the genesis: the chain goes on from it.
    expect(tail).not.toBe(planGenesis(id));
    expect(await eventsOf(id)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
    const after = await planRow(id);
    expect({ status: after.status, grant: after.grant }).toEqual({ status: "approved", grant: "grant-token" });
    const [vote1] = await h.database.db
      .select({ userId: decisions.userId, verdict: decisions.verdict, via: decisions.via })
      .from(decisions)
      .where(eq(decisions.planId, id));
    expect(vote1).toEqual({ userId: "U0ALICE", verdict: "approve", via: "web" });
    const rows = await h.database.db.select({ kind: outbox.kind, payload: outbox.payload }).from(outbox).where(eq(outbox.planId, id)).orderBy(asc(outbox.id));
    const payloadOf = (p: unknown) => (typeof p === "string" ? JSON.parse(p) : p) as { type: string; status: string };
    const added = rows.slice(outboxBefore).map((r) => `${r.kind} ${payloadOf(r.payload).type} ${payloadOf(r.payload).status}`);
    // No webhook row: the plan names no callback.
    expect(plan.callbackUrl).toBeNull();
    // The Home rebuilds from the database when delivered: one row, with the last event, stands for both.
    expect(added).toEqual(["slack decision.approve pending", "slack plan.approved approved", "slack_home plan.approved approved"]);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problems).toEqual([]);
    expect(verdict.ok).toBe(true);
  });

  it("throws when the UPDATE misses (the plan was not in a status the transition leaves), and the decision and events roll back", async () => {
    const { id } = await newPlan();
    const pending = await planRow(id);
    await cancelPlan(h.ctx, { agent: h.agent, planId: id });
    const err = await writeLocked(
      pending,
      () => {
        const { update, events } = transitionsLocked(pending, [{ transition: "approve", actor }], h.ctx.clock());
        return { decision: decision(pending.hash), update, events: [vote("pending"), ...events] };
      },
      "approved",
    ).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(String((err?.cause as Error | undefined)?.message)).toContain(
      `plan ${id} was not pending under its row lock: the approve transition missed (0 rows)`,
    );
    // Recognised as this transition's miss (decide retries a hand-off on a claim's), not another's.
    expect(isTransitionMissed(err, "approve")).toBe(true);
    expect(isTransitionMissed(err, "claim")).toBe(false);
    expect(isTransitionMissed(new Error("the approve transition"), "approve")).toBe(false);
    expect(await eventsOf(id)).toEqual(["plan.submitted", "plan.cancelled"]);
    expect(await h.database.db.select({ id: decisions.id }).from(decisions).where(eq(decisions.planId, id))).toEqual([]);
    expect((await planRow(id)).status).toBe("cancelled");
  });

  it("approve then claim write the plan row once, each with its own event, in order", async () => {
    const { id } = await newPlan();
    const plan = await planRow(id);
    const executor = { type: "system", process: "executor" } as const;
    let to = "";
    await writeLocked(
      plan,
      () => {
        const t = transitionsLocked(
          plan,
          [
            { transition: "approve", actor, set: { grant: "grant-token" } },
            { transition: "claim", actor: executor, set: { claimToken: "claim-token" }, countsClaim: true, unlessPaused: true, data: { claim: 1 } },
          ],
          h.ctx.clock(),
        );
        to = t.to;
        expect(t.events.map((e) => `${e.type} ${e.status}`)).toEqual(["plan.approved approved", "plan.executing executing"]);
        return { update: t.update, events: t.events };
      },
      "executing",
    );
    expect(to).toBe("executing");
    expect(await eventsOf(id)).toEqual(["plan.submitted", "plan.approved", "plan.executing"]);
    const row = await planRow(id);
    expect({ status: row.status, grant: row.grant, claimToken: row.claimToken, claims: row.claims }).toEqual({
      status: "executing",
      grant: "grant-token",
      claimToken: "claim-token",
      claims: 1,
    });
    expect((await verifyAudit(h.ctx)).ok).toBe(true);
  });

  it("a claim while paused makes the whole UPDATE miss, recognised as each step's miss, and nothing is written", async () => {
    const { id } = await newPlan();
    const plan = await planRow(id);
    await h.database.db.insert(pause).values({ reason: "test", pausedBy: "U0ADMIN", via: "web", since: h.ctx.clock() });
    try {
      const err = await writeLocked(
        plan,
        () => {
          const { update, events } = transitionsLocked(
            plan,
            [
              { transition: "approve", actor, set: { grant: "grant-token" } },
              {
                transition: "claim",
                actor: { type: "system", process: "executor" },
                set: { claimToken: "claim-token" },
                countsClaim: true,
                unlessPaused: true,
              },
            ],
            h.ctx.clock(),
          );
          return { update, events };
        },
        "executing",
      ).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(isTransitionMissed(err, "claim")).toBe(true);
      expect(isTransitionMissed(err, "approve")).toBe(true);
    } finally {
      await h.database.db.delete(pause);
    }
    expect(await eventsOf(id)).toEqual(["plan.submitted"]);
    expect((await planRow(id)).status).toBe("pending");
    // A chain the lifecycle does not allow is refused before anything is sent.
    expect(() =>
      transitionsLocked(
        plan,
        [
          { transition: "approve", actor },
          { transition: "approve", actor },
        ],
        h.ctx.clock(),
      ),
    ).toThrow(/approve cannot follow a transition to approved/);
  });
});
