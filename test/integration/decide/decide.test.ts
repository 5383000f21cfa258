import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { decide, type DecideInput } from "../../../src/service/decide/decide.ts";
import { MAX_STATED_REASON_CHARS } from "../../../src/service/access/stated-reason.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { type ErrorCode } from "../../../src/contract/error-codes.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { auditEvents, decisions, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";
import { mergeRequest, openHarness, type Harness } from "../../support/harness.ts";

const WRONG_HASH = "sha256:" + "0".repeat(64);

describe.each(databaseKinds)("decide on $name", (kind) => {
  /** Quorum 1, approvers U0ALICE, U0BOB, U0CAROL. */
  const h = useHarness(kind);
  const h2 = h.another({ defaults: { requiredApprovals: 2 } });
  /** Quorum 2. */
  let seq = 0;

  /** A fresh plan with a title of its own, so every test decides on a plan nobody else touches. */
  async function newPlan(harness: HarnessView = h, overrides: Record<string, unknown> = {}): Promise<PlanView> {
    const { plan } = await submitPlan(harness.ctx, { agent: harness.agent, request: mergeRequest({ title: `decide test plan ${++seq}`, ...overrides }) });
    return plan;
  }

  async function snapshot(planId: string) {
    const [row] = await h.database.db
      .select({ status: plans.status, updatedAt: plans.updatedAt, rejectReason: plans.rejectReason })
      .from(plans)
      .where(eq(plans.id, planId));
    return {
      row,
      decisions: await h.database.db.$count(decisions, eq(decisions.planId, planId)),
      events: await h.database.db.$count(auditEvents, eq(auditEvents.planId, planId)),
    };
  }

  /** Asserts the decision is refused with `code` and that nothing about the plan changed. */
  async function expectRefused(harness: HarnessView, input: DecideInput, code: ErrorCode): Promise<ServiceError> {
    const before = await snapshot(input.planId);
    const err = await refusal(decide(harness.ctx, input));
    expect(err.code).toBe(code);
    expect(await snapshot(input.planId)).toEqual(before);
    return err;
  }

  const approve = (plan: PlanView, userId: string, extra: Partial<DecideInput> = {}): DecideInput => ({
    planId: plan.id,
    hash: plan.hash,
    actor: { userId, via: "web" },
    verdict: "approve",
    ...extra,
  });
  const reject = (plan: PlanView, userId: string, reason = "not today"): DecideInput => ({
    planId: plan.id,
    hash: plan.hash,
    actor: { userId, via: "slack" },
    verdict: "reject",
    reason,
  });

  describe("refusals, each recording nothing", () => {
    it("plan_expired once expiresAt has passed, even though no sweeper ran", async () => {
      const plan = await newPlan(h, { ttlSeconds: 60 });
      h.clock.advance(61);
      const err = await expectRefused(h, approve(plan, "U0ALICE"), "plan_expired");
      expect(err.details).toEqual({ expiresAt: plan.expiresAt });
      await expectRefused(h, reject(plan, "U0BOB"), "plan_expired");
      expect((await snapshot(plan.id)).row!.status).toBe("pending");
    });

    it("plan_expired at the exact expiry instant, but not a second before it", async () => {
      const early = await newPlan(h, { ttlSeconds: 60 });
      const onTime = await newPlan(h, { ttlSeconds: 60 });
      h.clock.advance(59);
      expect((await decide(h.ctx, approve(early, "U0ALICE"))).status).toBe("approved");
      h.clock.advance(1);
      await expectRefused(h, approve(onTime, "U0ALICE"), "plan_expired");
    });

    it("plan_expired when the sweeper already expired it", async () => {
      const plan = await newPlan(h, { ttlSeconds: 30 });
      h.clock.advance(31);
      expect(await expireDue(h.ctx)).toContain(plan.id);
      expect((await snapshot(plan.id)).row!.status).toBe("expired");
      await expectRefused(h, approve(plan, "U0ALICE"), "plan_expired");
      await expectRefused(h, reject(plan, "U0ALICE"), "plan_expired");
    });

    it("already_decided for an approved plan", async () => {
      const plan = await newPlan();
      await decide(h.ctx, approve(plan, "U0ALICE"));
      const err = await expectRefused(h, approve(plan, "U0BOB"), "already_decided");
      expect(err.details).toEqual({ status: "approved" });
      await expectRefused(h, reject(plan, "U0CAROL"), "already_decided");
      // The approver who already approved gets the same answer, not already_voted.
      await expectRefused(h, approve(plan, "U0ALICE"), "already_decided");
    });

    it("already_decided for a rejected plan", async () => {
      const plan = await newPlan();
      await decide(h.ctx, reject(plan, "U0ALICE", "wrong contact"));
      const err = await expectRefused(h, approve(plan, "U0BOB"), "already_decided");
      expect(err.details).toEqual({ status: "rejected" });
      await expectRefused(h, reject(plan, "U0BOB", "me too"), "already_decided");
    });

    it("already_decided for a cancelled plan", async () => {
      const plan = await newPlan();
      await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
      const err = await expectRefused(h, approve(plan, "U0BOB"), "already_decided");
      expect(err.details).toEqual({ status: "cancelled" });
    });

    it("a plan rejected before its expiry stays rejected when someone clicks after the expiry", async () => {
      const plan = await newPlan(h, { ttlSeconds: 60 });
      await decide(h.ctx, reject(plan, "U0ALICE", "no"));
      h.clock.advance(61);
      const before = await snapshot(plan.id);
      const err = await refusal(decide(h.ctx, approve(plan, "U0BOB")));
      // The spec's order leaves room for either answer here; what matters is that nothing changes.
      expect(["already_decided", "plan_expired"]).toContain(err.code);
      expect(await snapshot(plan.id)).toEqual(before);
      expect(before.row!.status).toBe("rejected");
    });

    it("hash_mismatch when the hash differs from the stored one", async () => {
      const plan = await newPlan();
      const err = await expectRefused(h, approve(plan, "U0ALICE", { hash: WRONG_HASH }), "hash_mismatch");
      expect(err.details).toEqual({ expected: plan.hash, got: WRONG_HASH });
      await expectRefused(h, approve(plan, "U0ALICE", { hash: "" }), "hash_mismatch");
      await expectRefused(h, { ...reject(plan, "U0ALICE"), hash: plan.hash.toUpperCase() }, "hash_mismatch");
      // Another plan's hash is as wrong as any.
      const other = await newPlan();
      await expectRefused(h, approve(plan, "U0ALICE", { hash: other.hash }), "hash_mismatch");
      expect((await decide(h.ctx, approve(plan, "U0ALICE"))).status).toBe("approved");
    });

    it("self_approval when the actor is onBehalfOf, even when listed as an approver", async () => {
      const plan = await newPlan(h, { onBehalfOf: "U0ALICE" });
      await expectRefused(h, approve(plan, "U0ALICE"), "self_approval");
      await expectRefused(h, reject(plan, "U0ALICE"), "self_approval");
      expect((await decide(h.ctx, approve(plan, "U0BOB"))).status).toBe("approved");
    });

    it("self_approval (not not_an_approver) for a requester who is not an approver", async () => {
      const plan = await newPlan();
      await expectRefused(h, approve(plan, "U0REQUESTER"), "self_approval");
    });

    it("not_an_approver for someone outside the policy", async () => {
      const plan = await newPlan();
      const err = await expectRefused(h, approve(plan, "U0MALLORY"), "not_an_approver");
      expect(err.details).toEqual({ approvers: ["U0ALICE", "U0BOB", "U0CAROL"] });
      await expectRefused(h, reject(plan, "U0MALLORY"), "not_an_approver");
    });

    it("not_found for a plan that does not exist", async () => {
      const err = await refusal(
        decide(h.ctx, { planId: "00000000-0000-4000-8000-000000000000", hash: WRONG_HASH, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" }),
      );
      expect(err.code).toBe("not_found");
    });

    it("not_found, before the database is asked, for a plan id that is not a UUID", async () => {
      for (const planId of ["not-a-uuid", "", "1; DROP TABLE plans", "00000000-0000-4000-8000-00000000000g", "00000000-0000-4000-8000-000000000000\u0000"]) {
        const err = await refusal(decide(h.ctx, { planId, hash: WRONG_HASH, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" }));
        expect(err.code, planId).toBe("not_found");
      }
    });
  });

  describe("refusal order", () => {
    it("an expired plan with a wrong hash, from the requester → plan_expired", async () => {
      const plan = await newPlan(h, { ttlSeconds: 60 });
      h.clock.advance(60);
      await expectRefused(h, approve(plan, "U0ALICE", { hash: WRONG_HASH }), "plan_expired");
      await expectRefused(h, approve(plan, "U0REQUESTER", { hash: WRONG_HASH }), "plan_expired");
      await expectRefused(h, approve(plan, "U0MALLORY"), "plan_expired");
    });

    it("a decided plan with a wrong hash, from the requester → already_decided", async () => {
      const plan = await newPlan();
      await decide(h.ctx, approve(plan, "U0ALICE"));
      await expectRefused(h, approve(plan, "U0BOB", { hash: WRONG_HASH }), "already_decided");
      await expectRefused(h, approve(plan, "U0REQUESTER", { hash: WRONG_HASH }), "already_decided");
      await expectRefused(h, approve(plan, "U0MALLORY", { hash: WRONG_HASH }), "already_decided");
    });

    it("a wrong hash from the requester → hash_mismatch; from an outsider → hash_mismatch", async () => {
      const plan = await newPlan();
      await expectRefused(h, approve(plan, "U0REQUESTER", { hash: WRONG_HASH }), "hash_mismatch");
      await expectRefused(h, approve(plan, "U0MALLORY", { hash: WRONG_HASH }), "hash_mismatch");
    });

    it("a requester who is also an approver → self_approval before not_an_approver", async () => {
      const plan = await newPlan(h, { onBehalfOf: "U0CAROL" });
      await expectRefused(h, approve(plan, "U0CAROL"), "self_approval");
    });
  });

  describe("user group approvers", () => {
    /** Approvers U0ALICE and user group S0REVIEWERS (members U0GINA, U0REQUESTER). */
    let hg: Harness;
    const failing = new Set<string>();
    beforeAll(async () => {
      hg = await openHarness(h.database, { defaults: { approvers: ["U0ALICE", "S0REVIEWERS"] } });
      hg.ctx.directory = {
        async membersOf(group) {
          if (failing.has(group)) throw new Error("Slack answered 500");
          return group === "S0REVIEWERS" ? ["U0GINA", "U0REQUESTER"] : [];
        },
      };
    });
    afterAll(async () => {
      await hg?.close();
    });

    it("a member decides; the requester in the group is still refused as self_approval; a non-member is not_an_approver", async () => {
      const plan = await newPlan(hg);
      await expectRefused(hg, approve(plan, "U0REQUESTER"), "self_approval");
      await expectRefused(hg, approve(plan, "U0MALLORY"), "not_an_approver");
      expect((await decide(hg.ctx, approve(plan, "U0GINA"))).status).toBe("approved");
    });

    it("when Slack cannot answer: approver_check_failed, recording nothing; someone listed by id is not held up", async () => {
      failing.add("S0REVIEWERS");
      try {
        const plan = await newPlan(hg);
        const err = await expectRefused(hg, approve(plan, "U0GINA"), "approver_check_failed");
        expect(err.message).toContain("S0REVIEWERS");
        expect((await decide(hg.ctx, approve(plan, "U0ALICE"))).status).toBe("approved");
      } finally {
        failing.delete("S0REVIEWERS");
      }
    });

    it("the refusal order holds through an outage: an expired plan is plan_expired, the requester is self_approval", async () => {
      failing.add("S0REVIEWERS");
      try {
        const plan = await newPlan(hg, { ttlSeconds: 60 });
        await expectRefused(hg, approve(plan, "U0REQUESTER"), "self_approval");
        hg.clock.advance(61);
        await expectRefused(hg, approve(plan, "U0GINA"), "plan_expired");
      } finally {
        failing.delete("S0REVIEWERS");
      }
    });
  });

  describe("quorum 2", () => {
    it("counts each person once and approves on the second distinct approval", async () => {
      const plan = await newPlan(h2);
      expect(plan.plan.policy.requiredApprovals).toBe(2);

      const first = await decide(h2.ctx, approve(plan, "U0ALICE"));
      expect(first).toEqual({ status: "pending", approvals: ["U0ALICE"], requiredApprovals: 2 });
      let view = await getPlan(h2.ctx, { agent: h2.agent, planId: plan.id });
      expect(view.status).toBe("pending");
      expect(view.approvals.map((a) => a.userId)).toEqual(["U0ALICE"]);

      const err = await expectRefused(h2, approve(plan, "U0ALICE", { actor: { userId: "U0ALICE", via: "slack" } }), "already_voted");
      expect(err.details).toEqual({ approvals: ["U0ALICE"], requiredApprovals: 2 });
      view = await getPlan(h2.ctx, { agent: h2.agent, planId: plan.id });
      expect(view.status).toBe("pending");
      expect(view.approvals).toHaveLength(1);

      const second = await decide(h2.ctx, approve(plan, "U0BOB"));
      expect(second).toEqual({ status: "approved", approvals: ["U0ALICE", "U0BOB"], requiredApprovals: 2 });
      view = await getPlan(h2.ctx, { agent: h2.agent, planId: plan.id });
      expect(view.status).toBe("approved");
      expect(view.approvals.map((a) => a.userId)).toEqual(["U0ALICE", "U0BOB"]);

      const events = await h.database.db
        .select({ type: auditEvents.type })
        .from(auditEvents)
        .where(eq(auditEvents.planId, plan.id))
        .orderBy(asc(auditEvents.id));
      expect(events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "decision.approve", "plan.approved"]);
    });

    it("a reject after one approval ends the plan at once", async () => {
      const plan = await newPlan(h2);
      await decide(h2.ctx, approve(plan, "U0ALICE"));
      const result = await decide(h2.ctx, reject(plan, "U0BOB", "wrong customer"));
      expect(result.status).toBe("rejected");
      const view = await getPlan(h2.ctx, { agent: h2.agent, planId: plan.id });
      expect(view.status).toBe("rejected");
      expect(view.rejection).toMatchObject({ userId: "U0BOB", via: "slack", reason: "wrong customer" });
      await expectRefused(h2, approve(plan, "U0CAROL"), "already_decided");
    });

    it("a reject with no approvals yet ends the plan at once", async () => {
      const plan = await newPlan(h2);
      expect((await decide(h2.ctx, reject(plan, "U0CAROL", "no"))).status).toBe("rejected");
    });
  });

  describe("reject", () => {
    it("needs a reason (invalid_request), recording nothing", async () => {
      const plan = await newPlan();
      const err = await expectRefused(h, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject" }, "invalid_request");
      expect(err.issues).toEqual([expect.objectContaining({ path: "/reason" })]);
      await expectRefused(h, reject(plan, "U0BOB", "   \n\t "), "invalid_request");
      await expectRefused(h, reject(plan, "U0BOB", ""), "invalid_request");
      expect((await snapshot(plan.id)).row!.status).toBe("pending");
    });

    it(`refuses a reason longer than ${MAX_STATED_REASON_CHARS} characters (invalid_request naming /reason), and takes one exactly that long`, async () => {
      const plan = await newPlan();
      const err = await expectRefused(h, reject(plan, "U0BOB", "x".repeat(MAX_STATED_REASON_CHARS + 1)), "invalid_request");
      expect(err.issues).toEqual([{ path: "/reason", message: `at most ${MAX_STATED_REASON_CHARS} characters (got ${MAX_STATED_REASON_CHARS + 1})` }]);
      // Characters, not UTF-16 units: an emoji counts once, as a person would count it.
      const emoji = "🙅".repeat(MAX_STATED_REASON_CHARS);
      expect((await decide(h.ctx, reject(plan, "U0BOB", emoji))).status).toBe("rejected");
      expect((await snapshot(plan.id)).row!.rejectReason).toBe(emoji);
    });

    it("refuses a reason that cannot be stored (NUL, lone surrogate) as invalid_request naming /reason, not a 500", async () => {
      const plan = await newPlan();
      for (const reason of ["wrong\u0000customer", "broken \uD800 text"]) {
        const err = await expectRefused(h, reject(plan, "U0BOB", reason), "invalid_request");
        expect(err.issues).toEqual([expect.objectContaining({ path: "/reason" })]);
      }
    });

    it("an approver who approved may still reject (a change of mind ends the plan)", async () => {
      const plan = await newPlan(h2);
      await decide(h2.ctx, approve(plan, "U0ALICE"));
      expect((await decide(h2.ctx, reject(plan, "U0ALICE", "I approved the wrong one"))).status).toBe("rejected");
    });

    it("stores the reason and shows it as the plan's rejection", async () => {
      const plan = await newPlan();
      const decidedAt = h.clock.now();
      const result = await decide(h.ctx, reject(plan, "U0CAROL", "  ticket 4411 was closed  "));
      expect(result.status).toBe("rejected");
      const { row } = await snapshot(plan.id);
      expect(row!.status).toBe("rejected");
      expect(row!.rejectReason).toBe("ticket 4411 was closed");
      const view = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
      expect(view.rejection).toEqual({ userId: "U0CAROL", via: "slack", reason: "ticket 4411 was closed", at: decidedAt.toISOString() });
      expect(view.approvals).toEqual([]);
      const events = await h.database.db.select().from(auditEvents).where(eq(auditEvents.planId, plan.id)).orderBy(asc(auditEvents.id));
      expect(events.map((e) => e.type)).toEqual(["plan.submitted", "plan.rejected"]);
      expect(events[1]!.actor).toEqual({ type: "user", userId: "U0CAROL", via: "slack" });
      expect(events[1]!.data).toEqual({ reason: "ticket 4411 was closed" });
    });

    it("a pending plan has no rejection", async () => {
      const plan = await newPlan();
      expect((await getPlan(h.ctx, { agent: h.agent, planId: plan.id })).rejection).toBeUndefined();
    });
  });

  describe("what is recorded", () => {
    it("audit events in order: plan.submitted, decision.approve, plan.approved", async () => {
      const plan = await newPlan();
      const decidedAt = h.clock.now();
      await decide(h.ctx, approve(plan, "U0BOB", { actor: { userId: "U0BOB", via: "slack" } }));
      const events = await h.database.db.select().from(auditEvents).where(eq(auditEvents.planId, plan.id)).orderBy(asc(auditEvents.id));
      expect(events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
      expect(events[1]!.actor).toEqual({ type: "user", userId: "U0BOB", via: "slack" });
      expect(events[1]!.data).toEqual({ approvals: 1, requiredApprovals: 1 });
      expect(events[2]!.actor).toEqual({ type: "user", userId: "U0BOB", via: "slack" });
      expect(events[2]!.data).toMatchObject({
        approvers: ["U0BOB"],
        grant: { jti: expect.any(String), kid: expect.any(String), expiresAt: expect.any(String) },
      });
      expect(events[2]!.at.toISOString()).toBe(decidedAt.toISOString());
    });

    it("decision rows bind the plan hash the person saw, the identity, the door, the time and the expiry", async () => {
      const plan = await newPlan(h2);
      const t1 = h2.clock.now();
      await decide(h2.ctx, approve(plan, "U0ALICE", { actor: { userId: "U0ALICE", via: "slack" } }));
      h2.clock.advance(7);
      const t2 = h2.clock.now();
      await decide(h2.ctx, approve(plan, "U0CAROL", { actor: { userId: "U0CAROL", via: "web" } }));
      const rows = await h.database.db.select().from(decisions).where(eq(decisions.planId, plan.id)).orderBy(asc(decisions.id));
      expect(
        rows.map((r) => ({
          planHash: r.planHash,
          userId: r.userId,
          via: r.via,
          verdict: r.verdict,
          reason: r.reason,
          decidedAt: r.decidedAt.toISOString(),
          expiresAt: r.expiresAt.toISOString(),
        })),
      ).toEqual([
        { planHash: plan.hash, userId: "U0ALICE", via: "slack", verdict: "approve", reason: null, decidedAt: t1.toISOString(), expiresAt: plan.expiresAt },
        { planHash: plan.hash, userId: "U0CAROL", via: "web", verdict: "approve", reason: null, decidedAt: t2.toISOString(), expiresAt: plan.expiresAt },
      ]);
      const view = await getPlan(h2.ctx, { agent: h2.agent, planId: plan.id });
      expect(view.approvals).toEqual([
        { userId: "U0ALICE", via: "slack", at: t1.toISOString() },
        { userId: "U0CAROL", via: "web", at: t2.toISOString() },
      ]);
    });

    it("a reject row stores its reason, hash and via", async () => {
      const plan = await newPlan();
      await decide(h.ctx, { ...reject(plan, "U0ALICE", "duplicate"), actor: { userId: "U0ALICE", via: "web" } });
      const rows = await h.database.db.select().from(decisions).where(eq(decisions.planId, plan.id));
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ planHash: plan.hash, userId: "U0ALICE", via: "web", verdict: "reject", reason: "duplicate" });
    });
  });
});
