import { and, asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { reminderPoints, reminderCandidates, remindDue } from "../../../src/service/watch/remind-due.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { auditEvents } from "../../../src/store/schema.ts";
import type { Database } from "../../../src/store/db.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

describe.each(databaseKinds)("reminders read only the plans that are due, on $name", (kind) => {
  /** crm: the defaults (no reminders); twice: 600 and 60 s before expiry; hourly: an hour before. */
  const h = useHarness(kind, {
    targets: (url) => ({
      crm: targetConfig(url),
      twice: targetConfig(url, { policy: { reminders: [600, 60] } }),
      hourly: targetConfig(url, { policy: { reminders: [3600] } }),
    }),
  });
  const submit = async (target: string, ttlSeconds: number): Promise<PlanView> =>
    (
      await submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: `${target} plan`,
          ttlSeconds,
          actions: [{ kind: "http.json", target, path: "/contacts/1", op: "merge", body: { email: `${target}@new.example` } }],
        }),
      })
    ).plan;
  const remindersOf = async (planId: string) =>
    (
      await h.ctx.database.db
        .select({ data: auditEvents.data })
        .from(auditEvents)
        .where(and(eq(auditEvents.planId, planId), eq(auditEvents.type, "plan.reminder")))
        .orderBy(asc(auditEvents.id))
    ).map((e) => (e.data as { secondsBefore: number }).secondsBefore);
  const candidateIds = async () => (await reminderCandidates(h.ctx, reminderPoints(h.ctx.config), h.ctx.clock())).map((c) => c.id).sort();

  it("with no reminder configured anywhere (the default) a sweep does not touch the database", async () => {
    await submit("crm", 900);
    const untouchable = new Proxy({} as Database, {
      get: (_, prop) => {
        throw new Error(`remindDue read database.${String(prop)} with no reminder configured`);
      },
    });
    const quiet: ServiceContext = { ...h.ctx, database: untouchable, config: { ...h.ctx.config, targets: { crm: h.ctx.config.targets.crm! } } };
    expect(reminderPoints(quiet.config)).toEqual([]);
    expect(await remindDue(quiet)).toBe(0);
  });

  it("each point fires once, nearest first; a point of another target's list, an undue plan and a decided one are not even read", async () => {
    const twice = await submit("twice", 900);
    const hourly = await submit("hourly", 7200);
    const decided = await submit("twice", 700);
    const quiet = await submit("crm", 600);
    expect(await candidateIds()).toEqual([]); // 900, 7200, 700 and 600 s left: no point reached
    expect(await remindDue(h.ctx)).toBe(0);

    await decide(h.ctx, { planId: decided.id, hash: decided.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "no" });
    h.clock.advance(301); // twice: 599 s left, past 600; decided: rejected; quiet (crm): no points of its own
    expect(await candidateIds()).toEqual([twice.id]); // quiet reached 600 s too, a point only on twice's list
    expect(await remindDue(h.ctx)).toBe(1);
    expect(await remindDue(h.ctx)).toBe(0); // a second sweep (or replica) sends nothing more
    expect(await remindersOf(twice.id)).toEqual([600]);
    expect(await candidateIds()).toEqual([]);

    h.clock.advance(3300); // hourly: 3599 s left, past 3600; twice and quiet expired
    expect(await candidateIds()).toEqual([hourly.id]);
    expect(await remindDue(h.ctx)).toBe(1);
    expect(await remindDue(h.ctx)).toBe(0);
    expect(await remindersOf(hourly.id)).toEqual([3600]);
    expect(await remindersOf(quiet.id)).toEqual([]);
    expect(await remindersOf(decided.id)).toEqual([]);
  });

  it("a sweep that wakes late sends only the nearest point (the stale one is recorded, never sent), once", async () => {
    const late = await submit("twice", 900);
    h.clock.advance(850); // 50 s left: both 600 and 60 reached, only 60 is sent (600 is stale)
    expect(await remindDue(h.ctx)).toBe(1);
    expect(await remindersOf(late.id)).toEqual([60]);
    expect(await candidateIds()).not.toContain(late.id);
    expect(await remindDue(h.ctx)).toBe(0);
  });

  it("a plan whose target is no longer configured gets the default points", async () => {
    h.clock.advance(3600); // every earlier plan has expired
    const orphan = await submit("crm", 900);
    const moved: ServiceContext = {
      ...h.ctx,
      config: {
        ...h.ctx.config,
        defaults: { ...h.ctx.config.defaults, reminders: [120] },
        targets: { twice: h.ctx.config.targets.twice!, hourly: h.ctx.config.targets.hourly! },
      },
    };
    const candidates = async () => (await reminderCandidates(moved, reminderPoints(moved.config), moved.clock())).map((c) => c.id);
    expect(await candidates()).toEqual([]);
    h.clock.advance(800);
    expect(await candidates()).toEqual([orphan.id]);
    expect(await remindDue(moved)).toBe(1);
    expect(await remindDue(moved)).toBe(0);
    expect(await remindersOf(orphan.id)).toEqual([120]);
  });
});
