import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { reviewPlan } from "../../../src/service/review/review-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { PlanBody } from "../../../src/web/plan-page.tsx";
import { watchTargets } from "../../../src/service/watch/watch-targets.ts";
import { auditEvents, outbox, plans, targetWatches, watchedActions } from "../../../src/store/schema.ts";
import { databaseKinds, postgresKind } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useHarness, type SuiteHarness } from "../../support/use-harness.ts";

const INTERVAL = 10;
const watched = (url: string) => ({
  crm: targetConfig(url, { watch: { intervalSeconds: INTERVAL } }),
  quiet: targetConfig(url, { watch: { intervalSeconds: 0 } }),
});

/** The GETs the target has answered for `path` so far. */
const readsOf = (h: SuiteHarness, path: string) => h.target.requests.filter((r) => r.method === "GET" && r.path === path).length;
let seq = 0;
async function submit(h: SuiteHarness, path = "/contacts/1", target = "crm") {
  const { plan } = await submitPlan(h.ctx, {
    agent: h.agent,
    request: mergeRequest({
      title: `watched plan ${++seq}`,
      actions: [{ kind: "http.json", target, path, op: "merge", body: { email: `new${seq}@example.com` } }],
    }),
  });
  return plan;
}
const statusOf = async (h: SuiteHarness, id: string) => (await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, id)))[0]!.status;
const watch = (ctx: ServiceContext, replica = "r1") => watchTargets(ctx, { replica });

describe.each(databaseKinds)("watching targets while plans are open ($name)", (kind) => {
  // The plans get a webhook sink, so the test sees what the agent is told.
  const h = useHarness(kind, { targets: watched, sinks: ["test"] });

  it("reads each watched resource once an interval, however many plans are on it; a change makes every open plan on it stale at once", async () => {
    h.target.set("/contacts/3", { id: 3, name: "Caio", email: "caio@old.example" });
    const first = await submit(h, "/contacts/3");
    const second = await submit(h, "/contacts/3");
    await decide(h.ctx, { planId: second.id, hash: second.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    expect(await statusOf(h, second.id)).toBe("approved");
    const before = readsOf(h, "/contacts/3");

    // The first pass lists the plans; their resource is first due within one interval.
    await watch(h.ctx);
    h.clock.advance(INTERVAL);
    expect((await watch(h.ctx)).read).toBeGreaterThanOrEqual(1);
    expect(readsOf(h, "/contacts/3") - before).toBe(1);
    // Within the same interval nothing is read again.
    await watch(h.ctx);
    h.clock.advance(INTERVAL / 2);
    await watch(h.ctx);
    expect(readsOf(h, "/contacts/3") - before).toBe(1);
    expect(await statusOf(h, first.id)).toBe("pending");
    const [row] = await h.database.db
      .select()
      .from(targetWatches)
      .where(and(eq(targetWatches.target, "crm"), eq(targetWatches.path, "/contacts/3")));
    expect(row!.checkedAt).not.toBeNull();
    expect(row!.failedSince).toBeNull();

    // Someone edits the resource behind Countersign's back.
    h.target.set("/contacts/3", { id: 3, name: "Caio", email: "caio@other.example" });
    h.clock.advance(INTERVAL);
    const pass = await watch(h.ctx);
    expect(readsOf(h, "/contacts/3") - before).toBe(2);
    expect(pass.stale.sort()).toEqual([first.id, second.id].sort());
    const seen = await getPlan(h.ctx, { agent: h.agent, planId: first.id });
    expect(seen.status).toBe("stale");
    expect(seen.outcome).toMatchObject({
      status: "stale",
      actions: [
        {
          index: 0,
          target: "crm",
          path: "/contacts/3",
          status: "stale",
          expected: expect.any(String),
          now: h.target.etagOf("/contacts/3"),
          changedSincePreview: [{ path: "/email", from: "caio@old.example", to: "caio@other.example" }],
        },
      ],
    });
    // Through the one transition path: the audit event by the system, and the agent's side effect queued.
    const events = await h.database.db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, first.id), eq(auditEvents.type, "plan.stale")));
    expect(events).toHaveLength(1);
    expect(events[0]!.actor).toMatchObject({ type: "system", process: "watcher" });
    expect(await h.database.db.$count(outbox, and(eq(outbox.planId, second.id), eq(outbox.kind, "test")))).toBeGreaterThanOrEqual(1);
    expect(h.target.writes()).toEqual([]);

    // No open plan needs the resource any more: the next due pass drops its watch without reading.
    h.clock.advance(INTERVAL);
    await watch(h.ctx);
    expect(readsOf(h, "/contacts/3") - before).toBe(2);
    expect(await h.database.db.$count(targetWatches, eq(targetWatches.path, "/contacts/3"))).toBe(0);
  });

  it("a resource that already holds an open plan's change (someone made it) is not drift: the plan stays open", async () => {
    h.target.set("/contacts/13", { id: 13, name: "Lia", email: "lia@old.example" });
    const plan = await submit(h, "/contacts/13");
    const change = plan.preview.actions[0]!.after as Record<string, unknown>;
    await watch(h.ctx);
    h.target.set("/contacts/13", { ...change, updatedBy: "crm-ui" });
    h.clock.advance(INTERVAL);
    const before = readsOf(h, "/contacts/13");
    const pass = await watch(h.ctx);
    expect(readsOf(h, "/contacts/13") - before).toBe(1);
    expect(pass.stale).not.toContain(plan.id);
    expect(await statusOf(h, plan.id)).toBe("pending");
    // Moved past it, to something else: stale.
    h.target.set("/contacts/13", { ...change, email: "lia@third.example" });
    h.clock.advance(INTERVAL);
    expect((await watch(h.ctx)).stale).toContain(plan.id);
  });

  it("a read that fails keeps the plan pending and records since when; the next good read clears it", async () => {
    h.target.set("/contacts/4", { id: 4, name: "Dora", email: "dora@old.example" });
    const plan = await submit(h, "/contacts/4");
    await watch(h.ctx);
    // The plan page's live stream follows the version: it moves when re-reads start and stop failing.
    const version = await h.ctx.signals.version(plan.id);
    h.target.failWith = { status: 503, body: "down for maintenance" };
    try {
      h.clock.advance(INTERVAL);
      const failedAt = h.clock.now();
      expect((await watch(h.ctx)).failed).toBeGreaterThanOrEqual(1);
      h.clock.advance(INTERVAL);
      await watch(h.ctx);
      expect(await statusOf(h, plan.id)).toBe("pending");
      const [row] = await h.database.db.select().from(targetWatches).where(eq(targetWatches.path, "/contacts/4"));
      // Since the first failure, not the latest.
      expect(row!.failedSince).toEqual(failedAt);
      expect(row!.lastError).toMatch(/HTTP 503/);
      // The agent (and every reviewer view) sees since when the plan could not be re-checked.
      const seen = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
      expect(seen.watch).toEqual({ checkedAt: null, failingSince: failedAt.toISOString() });
      expect(await h.ctx.signals.version(plan.id)).not.toBe(version);
      const page = String(PlanBody({ reviewed: await reviewPlan(h.ctx, { planId: plan.id, reader: { userId: "U0ALICE" } }), session: undefined }));
      expect(page).toContain(`Could not re-check the target since ${failedAt.toISOString().slice(11, 16)} UTC`);
    } finally {
      h.target.failWith = undefined;
    }
    h.clock.advance(INTERVAL);
    await watch(h.ctx);
    const [row] = await h.database.db.select().from(targetWatches).where(eq(targetWatches.path, "/contacts/4"));
    expect(row!.failedSince).toBeNull();
    expect(await statusOf(h, plan.id)).toBe("pending");
    expect((await getPlan(h.ctx, { agent: h.agent, planId: plan.id })).watch).toEqual({ checkedAt: h.clock.now().toISOString(), failingSince: null });
    expect(await h.ctx.signals.version(plan.id)).toBe(version);
  });

  it("between full passes only recent plans are looked at; a plan missed then is listed by the next full pass", async () => {
    h.target.set("/contacts/11", { id: 11, name: "Kai", email: "kai@old.example" });
    const plan = await submit(h, "/contacts/11");
    await watch(h.ctx, "lister");
    expect(await h.database.db.$count(watchedActions, eq(watchedActions.planId, plan.id))).toBe(1);
    h.clock.advance(120);
    await watch(h.ctx, "lister");
    // As if its listing had been lost (a commit later than the overlap, say): recent passes do not see it…
    await h.database.db.delete(watchedActions).where(eq(watchedActions.planId, plan.id));
    h.clock.advance(10);
    await watch(h.ctx, "lister");
    expect(await h.database.db.$count(watchedActions, eq(watchedActions.planId, plan.id))).toBe(0);
    // …the full pass a few minutes on does.
    h.clock.advance(300);
    await watch(h.ctx, "lister");
    expect(await h.database.db.$count(watchedActions, eq(watchedActions.planId, plan.id))).toBe(1);
  });

  it("a target with watch.intervalSeconds 0 is never read by the watcher", async () => {
    h.target.set("/contacts/5", { id: 5, name: "Eva", email: "eva@old.example" });
    const plan = await submit(h, "/contacts/5", "quiet");
    const before = readsOf(h, "/contacts/5");
    await watch(h.ctx);
    h.target.set("/contacts/5", { id: 5, name: "Eva", email: "eva@other.example" });
    for (let i = 0; i < 3; i++) {
      h.clock.advance(INTERVAL);
      await watch(h.ctx);
    }
    expect(readsOf(h, "/contacts/5")).toBe(before);
    expect(await statusOf(h, plan.id)).toBe("pending");
    // Listed all the same (a plan is taken in once); its rows go with the first full pass after it closes.
    expect(await h.database.db.$count(watchedActions, eq(watchedActions.planId, plan.id))).toBe(1);
    await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
    h.clock.advance(301);
    await watch(h.ctx);
    expect(await h.database.db.$count(watchedActions, eq(watchedActions.planId, plan.id))).toBe(0);
  });
});

/** Two replicas at once need real concurrent connections: PostgreSQL only. */
describe.skipIf(!postgresKind)("two watchers on one PostgreSQL", () => {
  const h = useHarness(postgresKind!, { targets: watched });

  it("read each resource once per interval between them, with two plans on it", async () => {
    h.target.set("/contacts/6", { id: 6, name: "Febe", email: "febe@old.example" });
    await submit(h, "/contacts/6");
    await submit(h, "/contacts/6");
    const before = readsOf(h, "/contacts/6");
    // Two server replicas: same database and target, their own identity.
    const replicas = [{ ...h.ctx }, { ...h.ctx }];
    await Promise.all(replicas.map((ctx, i) => watch(ctx, `replica-${i}`)));
    for (let round = 1; round <= 4; round++) {
      h.clock.advance(INTERVAL);
      // Each replica ticks several times within the interval, all at once.
      await Promise.all(replicas.flatMap((ctx, i) => [watch(ctx, `replica-${i}`), watch(ctx, `replica-${i}`)]));
      expect(readsOf(h, "/contacts/6") - before).toBe(round);
    }
  });
});
