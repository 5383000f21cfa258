import { and, asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { deliverDue } from "../../../src/service/delivery/outbox-drain.ts";
import type { DeliveryPolicy, OutboxHandler } from "../../../src/service/delivery/sink-contract.ts";
import type { PlanEvent } from "../../../src/service/records/outbox.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { decisions, outbox, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { usePlanLifecycle } from "../../support/plan-lifecycle.ts";
import { refusal } from "../../support/refusal.ts";
import { mergeRequest } from "../../support/harness.ts";

describe.each(databaseKinds)("plan lifecycle on $name", (kind) => {
  const { h, newPlan, statusOf, eventTypes, approveAs, rejectAs } = usePlanLifecycle(kind);

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
