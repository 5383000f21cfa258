import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { auditEvents } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { usePlanLifecycle } from "../../support/plan-lifecycle.ts";

describe.each(databaseKinds)("plan lifecycle on $name", (kind) => {
  const { h, newPlan, statusOf, eventTypes, approveAs } = usePlanLifecycle(kind);

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
});
