import { asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Claim } from "../../../src/contract/executor-api.ts";
import type { Outcome } from "../../../src/plan/outcome.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { heartbeatClaim } from "../../../src/service/execution/heartbeat-claim.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { auditEvents, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";

/** The verbs behind the executor API (claim, heartbeat, report), called as the server calls them. */
describe.each(databaseKinds)("executor verbs on $name", (kind) => {
  const h = useHarness(kind);
  const LEASE_MS = 60_000; // testConfig's executor.leaseSeconds
  let seq = 0;

  const applied = (planId: string): Outcome => ({
    status: "applied",
    actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied", detail: `plan ${planId}` }],
  });
  const rowOf = async (planId: string) => (await h.database.db.select().from(plans).where(eq(plans.id, planId)))[0]!;
  const eventTypes = async (planId: string) =>
    (await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map(
      (e) => e.type,
    );

  /** A plan approved now; every test ends its plans in a final state, so a claim can only find this one. */
  async function approvedPlan(): Promise<string> {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `executor verbs plan ${++seq}` }) });
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");
    return plan.id;
  }
  async function claimOf(planId: string): Promise<Claim> {
    const claim = await claimApproved(h.ctx);
    expect(claim?.plan.id).toBe(planId);
    return claim!;
  }

  it("a claim leases the approved plan to one executor: executing, a fresh token, the lease from the injected clock", async () => {
    const planId = await approvedPlan();
    const claim = await claimOf(planId);
    expect(claim.leaseExpiresAt).toBe(new Date(h.clock.now().getTime() + LEASE_MS).toISOString());
    expect(claim.claimToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(claim.grant).toBe((await rowOf(planId)).grant);
    const row = await rowOf(planId);
    expect(row).toMatchObject({ status: "executing", claimToken: claim.claimToken, claims: 1 });
    expect(row.leaseExpiresAt?.toISOString()).toBe(claim.leaseExpiresAt);
    expect(await claimApproved(h.ctx)).toBeUndefined(); // held: a second executor gets nothing

    expect(await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: applied(planId) })).toEqual({ status: "applied" });
    expect(await rowOf(planId)).toMatchObject({ status: "applied", claimToken: null, leaseExpiresAt: null });
    expect(await eventTypes(planId)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing", "plan.applied"]);
  });

  it("a heartbeat extends the lease from the injected clock, so the plan is not taken over at the old expiry", async () => {
    const planId = await approvedPlan();
    const claim = await claimOf(planId);
    h.clock.advance(40);
    const beat = await heartbeatClaim(h.ctx, { claimToken: claim.claimToken });
    expect(beat.leaseExpiresAt).toBe(new Date(h.clock.now().getTime() + LEASE_MS).toISOString());
    expect((await rowOf(planId)).leaseExpiresAt?.toISOString()).toBe(beat.leaseExpiresAt);
    h.clock.advance(30); // past the first lease (60 s), inside the extended one
    expect(await claimApproved(h.ctx)).toBeUndefined();
    expect(await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: applied(planId) })).toEqual({ status: "applied" });
    expect((await rowOf(planId)).claims).toBe(1);
  });

  it("after the lease runs out another executor takes the plan over, and the first one's heartbeat and report are refused (fencing by claim token)", async () => {
    const planId = await approvedPlan();
    const first = await claimOf(planId);
    h.clock.advance(LEASE_MS / 1000 - 1);
    expect(await claimApproved(h.ctx)).toBeUndefined(); // a second before expiry: still held
    h.clock.advance(1);
    const second = await claimOf(planId);
    expect(second.claimToken).not.toBe(first.claimToken);
    expect(await rowOf(planId)).toMatchObject({ status: "executing", claimToken: second.claimToken, claims: 2 });
    expect((await eventTypes(planId)).slice(-2)).toEqual(["plan.executing", "plan.reclaimed"]);

    expect((await refusal(heartbeatClaim(h.ctx, { claimToken: first.claimToken }))).code).toBe("lease_lost");
    expect((await refusal(reportOutcome(h.ctx, { claimToken: first.claimToken, outcome: applied(planId) }))).code).toBe("lease_lost");
    expect(await rowOf(planId)).toMatchObject({ status: "executing", claimToken: second.claimToken, outcome: null });

    expect(await reportOutcome(h.ctx, { claimToken: second.claimToken, outcome: { status: "stale", reason: "the contact changed", actions: [] } })).toEqual({
      status: "stale",
    });
    expect(await rowOf(planId)).toMatchObject({ status: "stale", claimToken: null });
  });

  it("a claim is reported once: the second report and a heartbeat after it are refused, the outcome stays the first", async () => {
    const planId = await approvedPlan();
    const claim = await claimOf(planId);
    await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: applied(planId) });
    const events = await eventTypes(planId);
    expect((await refusal(reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: { status: "failed", reason: "again", actions: [] } }))).code).toBe(
      "lease_lost",
    );
    expect((await refusal(heartbeatClaim(h.ctx, { claimToken: claim.claimToken }))).code).toBe("lease_lost");
    expect(await rowOf(planId)).toMatchObject({ status: "applied", outcome: applied(planId) });
    expect(await eventTypes(planId)).toEqual(events);
  });

  it("a report or heartbeat of a claim nobody holds is refused and changes nothing", async () => {
    const planId = await approvedPlan();
    const claim = await claimOf(planId);
    const before = { row: await rowOf(planId), events: await eventTypes(planId) };
    expect((await refusal(reportOutcome(h.ctx, { claimToken: "never-issued-token", outcome: applied(planId) }))).code).toBe("lease_lost");
    expect((await refusal(heartbeatClaim(h.ctx, { claimToken: "never-issued-token" }))).code).toBe("lease_lost");
    expect(await rowOf(planId)).toEqual(before.row);
    expect(await eventTypes(planId)).toEqual(before.events);
    await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: applied(planId) });
  });

  it("an outcome that is not one is refused naming the field, and the claim stays open", async () => {
    const planId = await approvedPlan();
    const claim = await claimOf(planId);
    const err = await refusal(reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: { status: "done", actions: [] } }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toContain("status");
    expect(await rowOf(planId)).toMatchObject({ status: "executing", claimToken: claim.claimToken });
    await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: applied(planId) });
  });
});
