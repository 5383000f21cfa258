import { and, asc, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { auditChainHash, auditContentDigest, chainGenesis } from "../../src/service/records/audit.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { cancelPlan } from "../../src/service/intake/cancel-plan.ts";
import type { ServiceContext } from "../../src/service/context.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { expireDue } from "../../src/service/watch/expire-due.ts";
import { getPlan } from "../../src/service/intake/get-plan.ts";
import { listPlanEvents } from "../../src/service/intake/list-events.ts";
import { deliverDue } from "../../src/service/delivery/outbox-drain.ts";
import { type DeliveryPolicy, type OutboxHandler } from "../../src/service/delivery/sink-contract.ts";
import { type PlanEvent } from "../../src/service/records/outbox.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { waitForPlan } from "../../src/service/intake/wait-for-plan.ts";
import { auditEvents, decisions, outbox, plans } from "../../src/store/schema.ts";
import { databaseKinds } from "../support/databases.ts";
import { refusal } from "../support/refusal.ts";
import { useHarness } from "../support/use-harness.ts";
import { mergeRequest } from "../support/harness.ts";

describe.each(databaseKinds)("plan lifecycle on $name", (kind) => {
  /** Quorum 1, every plan event also goes to the "test" outbox sink. */
  const h = useHarness(kind, { sinks: ["test"] });
  let intruder: AgentIdentity;
  let seq = 0;

  beforeAll(async () => {
    const other = await addAgent(h.ctx, { name: "intruder" });
    intruder = { id: other.id, name: other.name };
  });

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

  describe("expireDue", () => {
    it("expires only due pending plans, returns their ids, and does it once", async () => {
      await expireDue(h.ctx); // whatever earlier tests left due
      const due = await newPlan({ ttlSeconds: 60 });
      const later = await newPlan({ ttlSeconds: 600 });
      const approved = await newPlan({ ttlSeconds: 60 });
      await approveAs(approved, "U0ALICE");
      const cancelled = await newPlan({ ttlSeconds: 60 });
      await cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id });
      const mine = new Set([due.id, later.id, approved.id, cancelled.id]);

      h.clock.advance(59);
      expect((await expireDue(h.ctx)).filter((id) => mine.has(id))).toEqual([]);
      expect(await statusOf(due.id)).toBe("pending");

      h.clock.advance(1);
      const expired = await expireDue(h.ctx);
      expect(expired.filter((id) => mine.has(id))).toEqual([due.id]);
      for (const id of expired) expect(await statusOf(id)).toBe("expired");
      expect(await statusOf(later.id)).toBe("pending");
      expect(await statusOf(approved.id)).toBe("approved");
      expect(await statusOf(cancelled.id)).toBe("cancelled");

      expect(await expireDue(h.ctx)).toEqual([]);
      expect(await eventTypes(due.id)).toEqual(["plan.submitted", "plan.expired"]);
      const [event] = await h.database.db
        .select()
        .from(auditEvents)
        .where(and(eq(auditEvents.planId, due.id), eq(auditEvents.type, "plan.expired")));
      expect(event!.actor).toEqual({ type: "system", process: "sweeper" });

      // 600 s in: the later plan's TTL and the approved plan's grant (600 s) have both run out.
      h.clock.advance(540);
      expect((await expireDue(h.ctx)).filter((id) => mine.has(id)).sort()).toEqual([later.id, approved.id].sort());
      expect(await statusOf(approved.id)).toBe("expired");
      expect(await statusOf(later.id)).toBe("expired");
      expect(await eventTypes(approved.id)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.expired"]);
    });

    it("takes at most a batch at a time, oldest expiry first, and the rest on the next run", async () => {
      await expireDue(h.ctx);
      const a = await newPlan({ ttlSeconds: 30 });
      const b = await newPlan({ ttlSeconds: 20 });
      const c = await newPlan({ ttlSeconds: 10 });
      h.clock.advance(30);
      const first = await expireDue(h.ctx, { batch: 2 });
      expect(first).toEqual([c.id, b.id]);
      expect(await statusOf(a.id)).toBe("pending");
      expect(await expireDue(h.ctx, { batch: 2 })).toEqual([a.id]);
      expect(await expireDue(h.ctx, { batch: 2 })).toEqual([]);
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

  describe("outbox", () => {
    const outboxRows = (planId: string, kindName = "test") =>
      h.database.db
        .select()
        .from(outbox)
        .where(and(eq(outbox.planId, planId), eq(outbox.kind, kindName)))
        .orderBy(asc(outbox.id));

    it("every plan event writes one outbox row per sink, matching the audit trail", async () => {
      const approved = await newPlan();
      expect(await outboxRows(approved.id)).toHaveLength(1);
      // Refusals write nothing.
      await refusal(decide(h.ctx, { planId: approved.id, hash: "sha256:" + "1".repeat(64), actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" }));
      await refusal(decide(h.ctx, { planId: approved.id, hash: approved.hash, actor: { userId: "U0MALLORY", via: "web" }, verdict: "approve" }));
      expect(await outboxRows(approved.id)).toHaveLength(1);
      await approveAs(approved, "U0ALICE");

      const cancelled = await newPlan();
      await cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id });
      const rejected = await newPlan();
      await rejectAs(rejected, "U0BOB", "no");
      await expireDue(h.ctx);
      const expired = await newPlan({ ttlSeconds: 10 });
      h.clock.advance(10);
      expect(await expireDue(h.ctx)).toContain(expired.id);

      for (const plan of [approved, cancelled, rejected, expired]) {
        const rows = await outboxRows(plan.id);
        const types = await eventTypes(plan.id);
        expect(rows.map((r) => (r.payload as PlanEvent).type)).toEqual(types);
        for (const r of rows) {
          expect(r.deliveredAt).toBeNull();
          expect(r.attempts).toBe(0);
          expect(r.payload).toMatchObject({ planId: plan.id, hash: plan.hash });
        }
      }
      expect((await outboxRows(approved.id)).map((r) => (r.payload as PlanEvent).status)).toEqual(["pending", "pending", "approved"]);
      expect(await eventTypes(approved.id)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
      expect(await eventTypes(expired.id)).toEqual(["plan.submitted", "plan.expired"]);
    });

    it("writes one row for each configured sink; webhooks only for plans that asked for them", async () => {
      const ctx = { ...h.ctx, sinks: ["slack", "webhook"] };
      const plain = await newPlan({}, ctx);
      const plainRows = await h.database.db.select().from(outbox).where(eq(outbox.planId, plain.id));
      expect(plainRows.map((r) => r.kind)).toEqual(["slack"]);
      const hooked = await newPlan({ callbackUrl: "http://127.0.0.1:9/hook" }, ctx);
      const hookedRows = await h.database.db.select().from(outbox).where(eq(outbox.planId, hooked.id));
      expect(hookedRows.map((r) => r.kind).sort()).toEqual(["slack", "webhook"]);
    });

    it("is written in the transaction of the transition: when the outbox write fails, nothing is recorded", async () => {
      const plan = await newPlan();
      // PostgreSQL refuses NUL in text, so enqueuing for this sink fails inside the transaction.
      const broken: ServiceContext = { ...h.ctx, sinks: ["test", "bro\u0000ken"] };
      await expect(decide(broken, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).rejects.toThrow();
      expect(await statusOf(plan.id)).toBe("pending");
      expect(await h.database.db.$count(decisions, eq(decisions.planId, plan.id))).toBe(0);
      expect(await eventTypes(plan.id)).toEqual(["plan.submitted"]);
      expect(await outboxRows(plan.id)).toHaveLength(1);

      await expect(cancelPlan(broken, { agent: h.agent, planId: plan.id })).rejects.toThrow();
      expect(await statusOf(plan.id)).toBe("pending");
      expect(await eventTypes(plan.id)).toEqual(["plan.submitted"]);

      const rows = await h.database.db.$count(plans);
      await expect(submitPlan(broken, { agent: h.agent, request: mergeRequest({ title: "never stored" }) })).rejects.toThrow();
      expect(await h.database.db.$count(plans)).toBe(rows);

      // With a working sink the same decision goes through.
      expect((await approveAs(plan, "U0ALICE")).status).toBe("approved");
      expect(await outboxRows(plan.id)).toHaveLength(3);
    });

    describe("deliverDue", () => {
      const quick: DeliveryPolicy = { maxAttempts: 3, leaseMs: 60_000, backoffMs: (n) => 1000 * n };
      /** One delivery pass as seen from the given clock. */
      const deliverAt = (handlers: Record<string, OutboxHandler>, clock: () => Date, policy: DeliveryPolicy) =>
        deliverDue({ ...h.ctx, clock }, { handlers, policy });

      it("delivers each plan's events in order, once", async () => {
        const ctx = { ...h.ctx, sinks: ["deliver-order"] };
        const one = await newPlan({}, ctx);
        const two = await newPlan({}, ctx);
        await decide(ctx, { planId: one.id, hash: one.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
        await cancelPlan(ctx, { agent: h.agent, planId: two.id });

        const seen: { planId: string; type: string; attempts: number; id: number }[] = [];
        const t = h.clock.now().getTime();
        const delivered = await deliverAt(
          {
            "deliver-order": async (payload, row) => {
              seen.push({ planId: payload.planId, type: payload.type, attempts: row.attempts, id: row.id });
            },
          },
          () => new Date(t),
          quick,
        );
        expect(delivered).toBe(5);
        expect(seen.filter((s) => s.planId === one.id).map((s) => s.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
        expect(seen.filter((s) => s.planId === two.id).map((s) => s.type)).toEqual(["plan.submitted", "plan.cancelled"]);
        expect(seen.every((s) => s.attempts === 1)).toBe(true);

        const rows = await h.database.db.select().from(outbox).where(eq(outbox.kind, "deliver-order")).orderBy(asc(outbox.id));
        expect(rows).toHaveLength(5);
        // The handler is told which row it delivers, as the number the type promises.
        expect([...seen.map((s) => s.id)].sort((x, y) => x - y)).toEqual(rows.map((r) => r.id));
        for (const s of seen) expect(typeof s.id).toBe("number");
        for (const r of rows) {
          expect(r.deliveredAt?.getTime()).toBe(t);
          expect(r.deadAt).toBeNull();
        }
        // Delivered rows are never delivered again.
        expect(
          await deliverAt(
            {
              "deliver-order": async () => {
                throw new Error("again?");
              },
            },
            () => new Date(t + 3_600_000),
            quick,
          ),
        ).toBe(0);
      });

      it("leaves rows of other sinks alone", async () => {
        const ctx = { ...h.ctx, sinks: ["deliver-mine"] };
        const plan = await newPlan({}, ctx);
        const calls: string[] = [];
        const delivered = await deliverAt(
          {
            "deliver-nobody": async () => {
              calls.push("x");
            },
          },
          () => new Date(h.clock.now().getTime() + 1000),
          quick,
        );
        expect(delivered).toBe(0);
        expect(calls).toEqual([]);
        const [row] = await outboxRows(plan.id, "deliver-mine");
        expect(row!.attempts).toBe(0);
        expect(row!.deliveredAt).toBeNull();
      });

      it("does not deliver rows before they are available", async () => {
        const ctx = { ...h.ctx, sinks: ["deliver-future"] };
        const plan = await newPlan({}, ctx);
        const [row] = await outboxRows(plan.id, "deliver-future");
        const calls: string[] = [];
        const handlers = {
          "deliver-future": async (p: PlanEvent) => {
            calls.push(p.type);
          },
        };
        expect(await deliverAt(handlers, () => new Date(row!.availableAt.getTime() - 1), quick)).toBe(0);
        expect(calls).toEqual([]);
        expect(await deliverAt(handlers, () => row!.availableAt, quick)).toBe(1);
        expect(calls).toEqual(["plan.submitted"]);
      });

      it("retries a failing handler after its backoff, then delivers", async () => {
        const ctx = { ...h.ctx, sinks: ["deliver-retry"] };
        const plan = await newPlan({}, ctx);
        const t = h.clock.now().getTime();
        let now = t;
        let failuresLeft = 2;
        const attempts: number[] = [];
        const handlers = {
          "deliver-retry": async (_payload: PlanEvent, row: { attempts: number }) => {
            attempts.push(row.attempts);
            if (failuresLeft-- > 0) throw new Error(`slack is down (${row.attempts})`);
          },
        };
        const run = (at: number) => {
          now = at;
          return deliverAt(handlers, () => new Date(now), quick);
        };

        expect(await run(t)).toBe(0);
        expect(attempts).toEqual([1]);
        let [row] = await outboxRows(plan.id, "deliver-retry");
        expect(row).toMatchObject({ attempts: 1, lastError: "slack is down (1)", deliveredAt: null, deadAt: null });
        expect(row!.availableAt.getTime()).toBe(t + 1000); // backoffMs(1)

        expect(await run(t + 999)).toBe(0);
        expect(attempts).toEqual([1]);
        expect(await run(t + 1000)).toBe(0);
        expect(attempts).toEqual([1, 2]);
        [row] = await outboxRows(plan.id, "deliver-retry");
        expect(row!.availableAt.getTime()).toBe(t + 1000 + 2000); // backoffMs(2)

        expect(await run(t + 2999)).toBe(0);
        expect(attempts).toEqual([1, 2]);
        expect(await run(t + 3000)).toBe(1);
        expect(attempts).toEqual([1, 2, 3]);
        [row] = await outboxRows(plan.id, "deliver-retry");
        expect(row).toMatchObject({ attempts: 3, lastError: null, deadAt: null });
        expect(row!.deliveredAt?.getTime()).toBe(t + 3000);
      });

      it("dead-letters a row after maxAttempts and stops trying it", async () => {
        const ctx = { ...h.ctx, sinks: ["deliver-dead"] };
        const plan = await newPlan({}, ctx);
        const t = h.clock.now().getTime();
        let calls = 0;
        const handlers = {
          "deliver-dead": async () => {
            calls++;
            throw new Error("gone for good");
          },
        };
        for (let i = 0; i < 10; i++) await deliverAt(handlers, () => new Date(t + i * 10_000), quick);
        expect(calls).toBe(quick.maxAttempts);
        const [row] = await outboxRows(plan.id, "deliver-dead");
        expect(row).toMatchObject({ attempts: 3, lastError: "gone for good", deliveredAt: null });
        expect(row!.deadAt?.getTime()).toBe(t + 20_000);
      });

      it("holds a plan's later rows behind a failing one, without holding other plans", async () => {
        const ctx = { ...h.ctx, sinks: ["deliver-block"] };
        const stuck = await newPlan({}, ctx);
        await cancelPlan(ctx, { agent: h.agent, planId: stuck.id });
        await newPlan({}, ctx);
        const t = h.clock.now().getTime();
        let failing = true;
        const seen: string[] = [];
        const handlers = {
          "deliver-block": async (payload: PlanEvent) => {
            const label = `${payload.planId === stuck.id ? "stuck" : "free"}:${payload.type}`;
            if (failing && label === "stuck:plan.submitted") {
              seen.push(`${label}!`);
              throw new Error("first post failed");
            }
            seen.push(label);
          },
        };
        const policy: DeliveryPolicy = { ...quick, maxAttempts: 10 };

        expect(await deliverAt(handlers, () => new Date(t), policy)).toBe(1);
        expect(seen).toEqual(["stuck:plan.submitted!", "free:plan.submitted"]);

        // The cancel row is due all along, but its plan's first row is not delivered yet.
        expect(await deliverAt(handlers, () => new Date(t + 500), policy)).toBe(0);
        expect(await deliverAt(handlers, () => new Date(t + 1000), policy)).toBe(0);
        expect(seen).toEqual(["stuck:plan.submitted!", "free:plan.submitted", "stuck:plan.submitted!"]);
        const [, cancelRow] = await outboxRows(stuck.id, "deliver-block");
        expect(cancelRow).toMatchObject({ attempts: 0, deliveredAt: null });

        failing = false;
        expect(await deliverAt(handlers, () => new Date(t + 60_000), policy)).toBe(2);
        expect(seen.slice(3)).toEqual(["stuck:plan.submitted", "stuck:plan.cancelled"]);
      });
    });
  });
});
