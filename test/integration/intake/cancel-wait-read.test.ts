import { and, asc, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { auditChainHash, auditContentDigest, chainGenesis } from "../../../src/service/records/audit.ts";
import type { AgentIdentity } from "../../../src/service/agents/authenticate-agent.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { listPlanEvents } from "../../../src/service/intake/list-events.ts";
import { waitForPlan } from "../../../src/service/intake/wait-for-plan.ts";
import { auditEvents } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { usePlanLifecycle } from "../../support/plan-lifecycle.ts";
import { refusal } from "../../support/refusal.ts";

describe.each(databaseKinds)("plan lifecycle on $name", (kind) => {
  const { h, newPlan, statusOf, eventTypes, approveAs, rejectAs } = usePlanLifecycle(kind);
  let intruder: AgentIdentity;

  beforeAll(async () => {
    const other = await addAgent(h.ctx, { name: "intruder" });
    intruder = { id: other.id, name: other.name };
  });

  describe("cancelPlan", () => {
    it("withdraws the agent's own pending plan and audits it", async () => {
      const plan = await newPlan();
      const view = await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
      expect(view.status).toBe("cancelled");
      expect(await statusOf(plan.id)).toBe("cancelled");
      expect(await eventTypes(plan.id)).toEqual(["plan.submitted", "plan.cancelled"]);
      const [event] = await h.database.db
        .select()
        .from(auditEvents)
        .where(and(eq(auditEvents.planId, plan.id), eq(auditEvents.type, "plan.cancelled")));
      expect(event!.actor).toEqual({ type: "agent", agentId: h.agent.id, name: h.agent.name });
    });

    it("answers not_found to another agent and leaves the plan pending", async () => {
      const plan = await newPlan();
      const err = await refusal(cancelPlan(h.ctx, { agent: intruder, planId: plan.id }));
      expect(err.code).toBe("not_found");
      expect(await statusOf(plan.id)).toBe("pending");
      expect(await eventTypes(plan.id)).toEqual(["plan.submitted"]);
    });

    it("refuses a plan that is no longer pending with already_decided", async () => {
      const approved = await newPlan();
      await approveAs(approved, "U0ALICE");
      const err = await refusal(cancelPlan(h.ctx, { agent: h.agent, planId: approved.id }));
      expect(err.code).toBe("already_decided");
      expect(err.details).toEqual({ status: "approved" });
      expect(await statusOf(approved.id)).toBe("approved");

      const rejected = await newPlan();
      await rejectAs(rejected, "U0BOB", "no");
      expect((await refusal(cancelPlan(h.ctx, { agent: h.agent, planId: rejected.id }))).code).toBe("already_decided");

      const cancelled = await newPlan();
      await cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id });
      const twice = await refusal(cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id }));
      expect(twice.code).toBe("already_decided");
      expect(twice.details).toEqual({ status: "cancelled" });
      expect(await eventTypes(cancelled.id)).toEqual(["plan.submitted", "plan.cancelled"]);
    });

    it("answers not_found for an id that is not a plan", async () => {
      expect((await refusal(cancelPlan(h.ctx, { agent: h.agent, planId: "not-a-uuid" }))).code).toBe("not_found");
      expect((await refusal(cancelPlan(h.ctx, { agent: h.agent, planId: "00000000-0000-4000-8000-000000000000" }))).code).toBe("not_found");
    });
  });

  describe("waitForPlan", () => {
    it("returns at once, without waiting, for a plan in a final status", async () => {
      const plan = await newPlan();
      await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
      const wait = vi.spyOn(h.ctx.signals, "wait");
      try {
        const view = await waitForPlan(h.ctx, { agent: h.agent, planId: plan.id, timeoutMs: 60_000 });
        expect(view.status).toBe("cancelled");
        // Armed before the read, and disarmed once the read shows the plan final.
        expect(wait).toHaveBeenCalledOnce();
        expect(wait.mock.calls[0]![2]?.aborted).toBe(true);
      } finally {
        wait.mockRestore();
      }
    });

    // The wait's timeout (60 s) is longer than this test's (15 s): only an early return passes.
    it("returns when another task decides the plan while it waits", { timeout: 15_000 }, async () => {
      const plan = await newPlan();
      let entered!: () => void;
      const waiting = new Promise<void>((resolve) => (entered = resolve));
      const signals = h.ctx.signals;
      const original = signals.wait.bind(signals);
      const wait = vi.spyOn(signals, "wait").mockImplementation((planId, ms, signal) => {
        entered();
        return original(planId, ms, signal);
      });
      try {
        const result = waitForPlan(h.ctx, { agent: h.agent, planId: plan.id, timeoutMs: 60_000 });
        await waiting; // the waiter armed its wait; the rejection lands before or after its read
        await rejectAs(plan, "U0CAROL", "changed my mind");
        const view = await result;
        expect(view.status).toBe("rejected");
        expect(view.rejection).toMatchObject({ userId: "U0CAROL", reason: "changed my mind" });
        expect(wait).toHaveBeenCalled();
      } finally {
        wait.mockRestore();
      }
    });

    it("keeps waiting through approval (still open) and returns the approved plan when time runs out", async () => {
      const plan = await newPlan();
      await approveAs(plan, "U0ALICE");
      const view = await waitForPlan(h.ctx, { agent: h.agent, planId: plan.id, timeoutMs: 300 });
      expect(view.status).toBe("approved");
    });

    it("returns the pending plan when the timeout passes", async () => {
      const plan = await newPlan();
      const view = await waitForPlan(h.ctx, { agent: h.agent, planId: plan.id, timeoutMs: 300 });
      expect(view.status).toBe("pending");
      expect(view.id).toBe(plan.id);
    });

    it("returns at once when aborted", async () => {
      const plan = await newPlan();
      const view = await waitForPlan(h.ctx, { agent: h.agent, planId: plan.id, timeoutMs: 60_000, signal: AbortSignal.abort() });
      expect(view.status).toBe("pending");
    });

    it("answers not_found to another agent", async () => {
      const plan = await newPlan();
      expect((await refusal(waitForPlan(h.ctx, { agent: intruder, planId: plan.id, timeoutMs: 100 }))).code).toBe("not_found");
    });
  });

  describe("reading plans", () => {
    it("getPlan answers not_found for another agent's plan, as for none", async () => {
      const plan = await newPlan();
      const err = await refusal(getPlan(h.ctx, { agent: intruder, planId: plan.id }));
      expect(err.code).toBe("not_found");
      expect(err.message).not.toContain(h.agent.name);
      expect((await getPlan(h.ctx, { agent: h.agent, planId: plan.id })).id).toBe(plan.id);
    });

    it("listPlanEvents lists the plan's audit events, oldest first; only to its agent", async () => {
      const plan = await newPlan();
      await approveAs(plan, "U0BOB");
      const events = await listPlanEvents(h.ctx, { agent: h.agent, planId: plan.id });
      expect(events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
      expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort((x, y) => x - y));
      expect(events[2]).toMatchObject({ actor: { type: "user", userId: "U0BOB", via: "web" }, data: { approvers: ["U0BOB"] } });
      expect(new Set(events.map((e) => e.hash)).size).toBe(3);
      expect((await refusal(listPlanEvents(h.ctx, { agent: intruder, planId: plan.id }))).code).toBe("not_found");
    });

    it("each plan's events (and the events with no plan) form a hash chain that recomputes", async () => {
      const rows = await h.database.db.select().from(auditEvents).orderBy(asc(auditEvents.id));
      expect(rows.length).toBeGreaterThan(10);
      const tails = new Map<string | null, string>();
      for (const e of rows) {
        const prev = tails.get(e.planId) ?? chainGenesis(e.planId);
        expect(e.prevHash).toBe(prev);
        expect(e.hash).toBe(
          auditChainHash(
            prev,
            auditContentDigest({ planId: e.planId, type: e.type, actor: e.actor as never, data: e.data as Record<string, unknown>, at: e.at }),
          ),
        );
        tails.set(e.planId, e.hash);
      }
      expect(tails.size).toBeGreaterThan(2);
    });
  });
});
