import { and, eq, inArray } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Claim } from "../../../src/contract/executor-api.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide, type DecideResult } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { auditEvents, decisions, plans } from "../../../src/store/schema.ts";
import { postgresKind } from "../../support/databases.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";
import { mergeRequest } from "../../support/harness.ts";

const APPROVERS_20 = Array.from({ length: 20 }, (_, i) => `U0APPR${String(i + 1).padStart(2, "0")}`);

/** Races need real concurrent connections: PostgreSQL only (PGlite runs one query at a time). */
describe.skipIf(!postgresKind)("races on postgres", () => {
  /** Quorum 1 among 20 approvers. */
  const h1 = useHarness(postgresKind!, { defaults: { approvers: APPROVERS_20, requiredApprovals: 1 } });
  const h20 = h1.another({ defaults: { approvers: APPROVERS_20, requiredApprovals: 20 } });
  /** Quorum 20 among 20 approvers. */
  let seq = 0;

  async function newPlan(h: HarnessView, overrides: Record<string, unknown> = {}): Promise<PlanView> {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `race plan ${++seq}`, ...overrides }) });
    return plan;
  }
  const countEvents = (planId: string, type: string) => h1.database.db.$count(auditEvents, and(eq(auditEvents.planId, planId), eq(auditEvents.type, type)));
  const countDecisions = (planId: string) => h1.database.db.$count(decisions, eq(decisions.planId, planId));
  const statusOf = async (planId: string) => (await h1.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, planId)))[0]?.status;

  function split<T>(results: PromiseSettledResult<T>[]): { won: T[]; lost: unknown[] } {
    return {
      won: results.filter((r): r is PromiseFulfilledResult<T> => r.status === "fulfilled").map((r) => r.value),
      lost: results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason),
    };
  }
  const codeOf = (err: unknown) => (err instanceof ServiceError ? err.code : `unexpected: ${String(err)}`);

  it("20 different approvers at once with quorum 1: one approval counts, one transition", async () => {
    const plan = await newPlan(h1);
    const results = await Promise.allSettled(
      APPROVERS_20.map((userId) => decide(h1.ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "slack" }, verdict: "approve" })),
    );
    const { won, lost } = split(results);

    expect(won).toHaveLength(1);
    expect(won[0]!.status).toBe("approved");
    expect(won[0]!.approvals).toHaveLength(1);
    expect(lost.map(codeOf)).toEqual(Array(19).fill("already_decided"));

    expect(await statusOf(plan.id)).toBe("approved");
    expect(await countDecisions(plan.id)).toBe(1);
    expect(await countEvents(plan.id, "decision.approve")).toBe(1);
    expect(await countEvents(plan.id, "plan.approved")).toBe(1);
    const [row] = await h1.database.db.select().from(decisions).where(eq(decisions.planId, plan.id));
    expect(row!.userId).toBe(won[0]!.approvals[0]);
  });

  it("20 different approvers at once with quorum 20: every vote counts, approved once", async () => {
    const plan = await newPlan(h20);
    expect(plan.plan.policy.requiredApprovals).toBe(20);
    const results = await Promise.allSettled(
      APPROVERS_20.map((userId) => decide(h20.ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "web" }, verdict: "approve" })),
    );
    const { won, lost } = split(results);

    expect(lost.map(codeOf)).toEqual([]);
    expect(won).toHaveLength(20);
    expect(won.filter((r) => r.status === "approved")).toHaveLength(1);
    expect(won.filter((r) => r.status === "pending")).toHaveLength(19);
    // Votes were serialized: each saw every earlier one, none was lost or counted twice.
    expect(won.map((r) => r.approvals.length).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const approvedResult = won.find((r) => r.status === "approved")!;
    expect([...approvedResult.approvals].sort()).toEqual([...APPROVERS_20].sort());

    expect(await statusOf(plan.id)).toBe("approved");
    expect(await countDecisions(plan.id)).toBe(20);
    expect(await countEvents(plan.id, "decision.approve")).toBe(20);
    expect(await countEvents(plan.id, "plan.approved")).toBe(1);
  });

  it("the same approver clicking 10 times at once counts once", async () => {
    const plan = await newPlan(h20);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => decide(h20.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0APPR07", via: "slack" }, verdict: "approve" })),
    );
    const { won, lost } = split(results);
    expect(won).toHaveLength(1);
    expect(lost.map(codeOf)).toEqual(Array(9).fill("already_voted"));
    expect(await countDecisions(plan.id)).toBe(1);
    expect(await statusOf(plan.id)).toBe("pending");
  });

  it("approve and reject at the same moment: exactly one outcome, the loser hears already_decided", async () => {
    const rounds = await Promise.all(
      Array.from({ length: 8 }, async (_, round) => {
        const plan = await newPlan(h1);
        const [approveResult, rejectResult] = await Promise.allSettled([
          decide(h1.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0APPR01", via: "slack" }, verdict: "approve" }),
          decide(h1.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0APPR02", via: "web" }, verdict: "reject", reason: `round ${round}` }),
        ]);
        return { plan, approveResult, rejectResult };
      }),
    );

    for (const { plan, approveResult, rejectResult } of rounds) {
      const { won, lost } = split<DecideResult>([approveResult, rejectResult]);
      expect(won).toHaveLength(1);
      expect(lost.map(codeOf)).toEqual(["already_decided"]);
      const final = await statusOf(plan.id);
      expect(final).toBe(won[0]!.status);
      expect(final).toBe(approveResult.status === "fulfilled" ? "approved" : "rejected");
      expect((await countEvents(plan.id, "plan.approved")) + (await countEvents(plan.id, "plan.rejected"))).toBe(1);
      expect(await countDecisions(plan.id)).toBe(1);
    }
  });

  it("cancel and approve at the same moment: exactly one outcome", async () => {
    for (let round = 0; round < 5; round++) {
      const plan = await newPlan(h1);
      const [cancelled, approved] = await Promise.allSettled([
        cancelPlan(h1.ctx, { agent: h1.agent, planId: plan.id }),
        decide(h1.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0APPR03", via: "web" }, verdict: "approve" }),
      ]);
      const outcomes = [cancelled, approved].filter((r) => r.status === "fulfilled");
      expect(outcomes).toHaveLength(1);
      const final = await statusOf(plan.id);
      expect(final).toBe(cancelled.status === "fulfilled" ? "cancelled" : "approved");
      const loser = [cancelled, approved].find((r) => r.status === "rejected") as PromiseRejectedResult;
      expect(codeOf(loser.reason)).toBe("already_decided");
      expect((await countEvents(plan.id, "plan.approved")) + (await countEvents(plan.id, "plan.cancelled"))).toBe(1);
    }
  });

  it("two sweepers over 30 due plans expire each exactly once", async () => {
    await expireDue(h1.ctx);
    const due = await Promise.all(Array.from({ length: 30 }, () => newPlan(h1, { ttlSeconds: 10 })));
    const ids = due.map((p) => p.id);
    h1.clock.advance(10);

    const [a, b] = await Promise.all([expireDue(h1.ctx), expireDue(h20.ctx)]);
    const mine = new Set(ids);
    const fromA = a.filter((id) => mine.has(id));
    const fromB = b.filter((id) => mine.has(id));
    expect(fromA.filter((id) => fromB.includes(id))).toEqual([]);
    expect([...fromA, ...fromB].sort()).toEqual([...ids].sort());

    const statuses = await h1.database.db.select({ id: plans.id, status: plans.status }).from(plans).where(inArray(plans.id, ids));
    expect(statuses.every((s) => s.status === "expired")).toBe(true);
    const events = await h1.database.db
      .select({ planId: auditEvents.planId })
      .from(auditEvents)
      .where(and(inArray(auditEvents.planId, ids), eq(auditEvents.type, "plan.expired")));
    expect(events).toHaveLength(30);
    expect(new Set(events.map((e) => e.planId)).size).toBe(30);

    expect(await Promise.all([expireDue(h1.ctx), expireDue(h1.ctx)])).toEqual([[], []]);
  });

  it("10 submissions at once with one idempotencyKey and body make one plan", async () => {
    const body = mergeRequest({ title: "Submitted ten times", idempotencyKey: "race-key-1" });
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => submitPlan(h1.ctx, { agent: h1.agent, request: structuredClone(body) })));
    const { won, lost } = split(results);
    expect(lost).toEqual([]);
    expect(won).toHaveLength(10);
    const ids = new Set(won.map((r) => r.plan.id));
    expect(ids.size).toBe(1);
    expect(new Set(won.map((r) => r.plan.hash)).size).toBe(1);
    expect(won.filter((r) => r.created)).toHaveLength(1);

    const rows = await h1.database.db
      .select({ id: plans.id })
      .from(plans)
      .where(and(eq(plans.agentId, h1.agent.id), eq(plans.idempotencyKey, "race-key-1")));
    expect(rows).toEqual([{ id: [...ids][0] }]);
    expect(await countEvents([...ids][0]!, "plan.submitted")).toBe(1);
  });

  /** Closes every plan an executor could claim now (earlier tests leave approved plans behind). */
  async function drainClaims(): Promise<void> {
    for (let claim = await claimApproved(h1.ctx); claim; claim = await claimApproved(h1.ctx)) {
      await reportOutcome(h1.ctx, {
        claimToken: claim.claimToken,
        outcome: { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] },
      });
    }
  }
  async function approvedPlan(title: string): Promise<PlanView> {
    const plan = await newPlan(h1, { title });
    expect((await decide(h1.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: APPROVERS_20[0]!, via: "web" }, verdict: "approve" })).status).toBe(
      "approved",
    );
    return plan;
  }

  it("8 executors claiming at once over 5 approved plans: each plan goes to one of them, once, under its own token", async () => {
    await drainClaims();
    const approved = await Promise.all(Array.from({ length: 5 }, (_, i) => approvedPlan(`claimed once ${i}`)));
    const ids = approved.map((p) => p.id).sort();

    const claims = (await Promise.all(Array.from({ length: 8 }, () => claimApproved(h1.ctx)))).filter((c): c is Claim => c !== undefined);
    expect(claims.map((c) => c.plan.id).sort()).toEqual(ids);
    expect(new Set(claims.map((c) => c.claimToken)).size).toBe(5);
    const rows = await h1.database.db
      .select({ status: plans.status, claims: plans.claims, claimToken: plans.claimToken })
      .from(plans)
      .where(inArray(plans.id, ids));
    expect(rows.every((r) => r.status === "executing" && r.claims === 1)).toBe(true);
    expect(rows.map((r) => r.claimToken).sort()).toEqual(claims.map((c) => c.claimToken).sort());
    for (const id of ids) expect(await countEvents(id, "plan.executing")).toBe(1);
    expect(await claimApproved(h1.ctx)).toBeUndefined();
    await Promise.all(
      claims.map((c) =>
        reportOutcome(h1.ctx, {
          claimToken: c.claimToken,
          outcome: { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] },
        }),
      ),
    );
  });

  it("5 executors at once over a plan whose lease ran out: one takes it over with a fresh token, the old one is fenced off", async () => {
    await drainClaims();
    const plan = await approvedPlan("taken over once");
    const first = (await claimApproved(h1.ctx))!;
    expect(first.plan.id).toBe(plan.id);
    h1.clock.advance(61); // testConfig's lease is 60 s; the grant (600 s) is still valid

    const claims = (await Promise.all(Array.from({ length: 5 }, () => claimApproved(h1.ctx)))).filter((c): c is Claim => c !== undefined);
    expect(claims.map((c) => c.plan.id)).toEqual([plan.id]);
    const second = claims[0]!;
    expect(second.claimToken).not.toBe(first.claimToken);
    const [row] = await h1.database.db
      .select({ status: plans.status, claims: plans.claims, claimToken: plans.claimToken })
      .from(plans)
      .where(eq(plans.id, plan.id));
    expect(row).toEqual({ status: "executing", claims: 2, claimToken: second.claimToken });
    expect(await countEvents(plan.id, "plan.reclaimed")).toBe(1);

    const outcome = { status: "applied" as const, actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" as const }] };
    await expect(reportOutcome(h1.ctx, { claimToken: first.claimToken, outcome })).rejects.toMatchObject({ code: "lease_lost" });
    expect(await reportOutcome(h1.ctx, { claimToken: second.claimToken, outcome })).toEqual({ status: "applied" });
  });
});
