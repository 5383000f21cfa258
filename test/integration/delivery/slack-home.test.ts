import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOME_SINK } from "../../../src/service/records/home-events.ts";
import { coveredLater, decidersOf } from "../../../src/service/review/home-tab.ts";
import { deliverDue } from "../../../src/service/delivery/outbox-drain.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { transition } from "../../../src/service/lifecycle/transition.ts";
import { deliveryClient } from "../../../src/slack/deliver.ts";
import { slackDirectory } from "../../../src/slack/directory.ts";
import { homeSink } from "../../../src/slack/home-publish.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * The slack_home sink's debounce on a real database: rows queued in a burst are delivered by the
 * real outbox worker, and each person's Home is published once, by the last row that concerns
 * them, showing everything. Group members are looked up through the emulator.
 */
describe.each(databaseKinds)("App Home publishing on $name", (kind) => {
  const h = useHarness(kind, {
    sinks: [HOME_SINK],
    targets: (url) => ({
      crm: targetConfig(url),
      grouped: targetConfig(url, { policy: { approvers: ["S0REVIEWERS", "U0ALICE"], requiredApprovals: 1 } }),
      solo: targetConfig(url, { policy: { approvers: ["U0SOLO"], requiredApprovals: 1 } }),
    }),
  });
  const slack = new SlackEmulator({ teamId: "T0TEST" });
  beforeAll(async () => {
    await slack.start();
    slack.setUsergroup("S0REVIEWERS", ["U0GROUPIE", "U0GROUPIE2"]);
    h.ctx.directory = slackDirectory(deliveryClient(slack.botToken, slack.url));
  });
  afterAll(() => slack.stop());

  const submit = (target = "crm") =>
    submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ actions: [{ kind: "http.json", target, path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }] }),
    }).then((r) => r.plan);
  const drain = async () => {
    const handlers = { [HOME_SINK]: homeSink(h.ctx, deliveryClient(slack.botToken, slack.url)) };
    while ((await deliverDue(h.ctx, { handlers })) > 0);
  };
  const publishesTo = (user: string) => slack.published.filter((p) => p.user === user).length;
  const listed = (user: string) => (JSON.stringify(slack.homeOf(user)?.blocks ?? []).match(/"action_id":"approve"/g) ?? []).length;
  const homeRows = async () =>
    (await h.database.rows<{ id: number | string }>(sql`SELECT id FROM outbox WHERE kind = ${HOME_SINK} AND delivered_at IS NULL ORDER BY id`)).map((r) =>
      Number(r.id),
    );

  it("a burst of 12 plans publishes each approver's Home once, showing all 12, and never the requester's", async () => {
    slack.reset();
    const plans = [];
    for (let i = 0; i < 12; i++) plans.push(await submit());
    expect(await homeRows()).toHaveLength(12);
    await drain();
    expect(await homeRows()).toEqual([]);
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL"]) {
      expect(publishesTo(user)).toBe(1);
      expect(listed(user)).toBe(12);
    }
    expect(publishesTo("U0REQUESTER")).toBe(0);
    expect(slack.callsTo("views.publish")).toHaveLength(3);
  });

  it("a later row covers group members only through a plan naming the same group (or them); a row already picked up covers no one", async () => {
    slack.reset();
    const grouped = await submit("grouped");
    const plain = await submit("crm");
    const [groupedRow, plainRow] = await homeRows();
    const groupedDeciders = (await decidersOf(h.ctx, grouped.id))!;
    expect(groupedDeciders.deciders.map((d) => d.userId).sort()).toEqual(["U0ALICE", "U0GROUPIE", "U0GROUPIE2"]);
    // The plain plan names Alice (not the group): only she is covered by its row.
    expect([...(await coveredLater(h.ctx, groupedRow!, groupedDeciders.deciders))]).toEqual(["U0ALICE"]);
    // Once a worker has picked the later row up it may have read the database already: it covers no one.
    await h.database.db.execute(sql`UPDATE outbox SET attempts = 1 WHERE id = ${plainRow!}`);
    expect([...(await coveredLater(h.ctx, groupedRow!, groupedDeciders.deciders))]).toEqual([]);
    await h.database.db.execute(sql`UPDATE outbox SET attempts = 0 WHERE id = ${plainRow!}`);
    await drain();
    expect(publishesTo("U0GROUPIE")).toBe(1);
    expect(publishesTo("U0ALICE")).toBe(1);
    expect(JSON.stringify(slack.homeOf("U0GROUPIE")!.blocks)).toContain(grouped.id);
    expect(JSON.stringify(slack.homeOf("U0ALICE")!.blocks)).toContain(plain.id);
  });

  it("Slack refusing one person's Home (not_enabled) is not retried and the others still get theirs; a 500 is retried", async () => {
    slack.reset();
    await submit();
    slack.failNext("views.publish", { error: "not_enabled" });
    await drain();
    expect(await homeRows()).toEqual([]);
    expect(slack.callsTo("views.publish").map((c) => c.answer?.body?.ok)).toEqual([false, true, true]);
    slack.reset();
    await submit();
    slack.failNext("views.publish", { status: 500 });
    await drain();
    const [row] = await h.database.rows<{ last_error: string }>(sql`SELECT last_error FROM outbox WHERE kind = ${HOME_SINK} AND delivered_at IS NULL`);
    expect(row?.last_error).toMatch(/HTTP 500/);
    expect(slack.published).toHaveLength(2); // the two others were published all the same
    h.clock.advance(2);
    await drain();
    expect(await homeRows()).toEqual([]);
  });

  it("a rate-limited publish is retried after Slack's Retry-After, and the Home still arrives", async () => {
    slack.reset();
    await submit();
    slack.failNext("views.publish", { retryAfter: 1 });
    await drain();
    const [row] = await h.database.rows<{ attempts: number; last_error: string; available_at: string }>(
      sql`SELECT attempts, last_error, available_at FROM outbox WHERE kind = ${HOME_SINK} AND delivered_at IS NULL`,
    );
    expect(row?.last_error).toMatch(/rate-limited.*Retry-After 1 s/);
    h.clock.advance(2);
    await drain();
    expect(await homeRows()).toEqual([]);
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL"]) expect(publishesTo(user)).toBeGreaterThanOrEqual(1);
  });
  it("a person published less than the spacing ago is waited for; a row queued during the wait covers them, and its own delivery publishes everything", async () => {
    slack.reset();
    // A spacing no test run outlasts, and a sleep that only records: the waits are the sink's to decide, not the clock's.
    const spacingMs = 60_000;
    const waits: number[] = [];
    let duringWait: (() => Promise<unknown>) | undefined;
    const sleep = async (ms: number) => {
      waits.push(ms);
      await duringWait?.();
    };
    const handlers = { [HOME_SINK]: homeSink(h.ctx, deliveryClient(slack.botToken, slack.url), { spacingMs, sleep }) };
    const drainWith = async () => {
      while ((await deliverDue(h.ctx, { handlers })) > 0);
    };
    await submit();
    await drainWith();
    expect(waits).toEqual([]);
    await submit();
    let third: Awaited<ReturnType<typeof submit>> | undefined;
    duringWait = async () => {
      duringWait = undefined;
      third = await submit();
    };
    await drainWith();
    // The second plan's delivery waited, and the third plan, stored meanwhile, covered its publish;
    // the third's delivery waited too and then published (nothing later covers it).
    expect(waits).toHaveLength(2);
    for (const ms of waits) expect(ms > 0 && ms <= spacingMs).toBe(true);
    expect(await homeRows()).toEqual([]);
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL"]) {
      expect(publishesTo(user)).toBe(2);
      expect(JSON.stringify(slack.homeOf(user)?.blocks ?? [])).toContain(third!.id);
    }
  });

  it("once the server is stopping (its signal aborted) nothing waits: each delivery publishes at once", async () => {
    slack.reset();
    const stopping = new AbortController();
    stopping.abort();
    const waits: number[] = [];
    const handlers = {
      [HOME_SINK]: homeSink(h.ctx, deliveryClient(slack.botToken, slack.url), {
        spacingMs: 60_000,
        sleep: async (ms) => void waits.push(ms),
        signal: stopping.signal,
      }),
    };
    for (let i = 0; i < 2; i++) {
      await submit();
      while ((await deliverDue(h.ctx, { handlers })) > 0);
    }
    expect(waits).toEqual([]);
    expect(publishesTo("U0ALICE")).toBe(2);
  });

  // On a target of its own approver, so what other tests leave pending never crowds their Home.
  it("a plan that stops waiting undecided (its target drifted) leaves its approvers' Homes; its later life queues no Home row", async () => {
    await drain();
    const plan = await submit("solo");
    await drain();
    expect(JSON.stringify(slack.homeOf("U0SOLO")!.blocks)).toContain(plan.id);
    slack.reset();
    await h.database.db.transaction((tx) => transition(h.ctx, tx, { planId: plan.id, transition: "drift", actor: { type: "system", process: "watcher" } }));
    expect(await homeRows()).toHaveLength(1);
    await drain();
    expect(publishesTo("U0SOLO")).toBe(1);
    expect(JSON.stringify(slack.homeOf("U0SOLO")!.blocks)).not.toContain(plan.id);
    // Approved: it leaves the Home. Claimed and applied: nothing a Home lists changes, so nothing is queued for it.
    const other = await submit("solo");
    await drain();
    expect(JSON.stringify(slack.homeOf("U0SOLO")!.blocks)).toContain(other.id);
    const step = (t: "approve" | "claim" | "apply") =>
      h.database.db.transaction((tx) => transition(h.ctx, tx, { planId: other.id, transition: t, actor: { type: "system", process: "test" } }));
    expect(await step("approve")).toBeDefined();
    expect(await homeRows()).toHaveLength(1);
    await drain();
    expect(JSON.stringify(slack.homeOf("U0SOLO")!.blocks)).not.toContain(other.id);
    expect(await step("claim")).toBeDefined();
    expect(await step("apply")).toBeDefined();
    expect(await homeRows()).toEqual([]);
  });

  it("a row an earlier version queued for an event no Home shows still publishes: it covered the row delivered before it", async () => {
    await drain();
    slack.reset();
    let duringWait: (() => Promise<unknown>) | undefined;
    const sleep = async () => {
      await duringWait?.();
    };
    const handlers = { [HOME_SINK]: homeSink(h.ctx, deliveryClient(slack.botToken, slack.url), { spacingMs: 60_000, sleep }) };
    const drainWith = async () => {
      while ((await deliverDue(h.ctx, { handlers })) > 0);
    };
    await submit("solo");
    await drainWith();
    const plan = await submit("solo");
    // While its row's delivery waits out the spacing, a row as an earlier version queued
    // for every event (here the hand-off's) arrives, and covers U0SOLO.
    duringWait = async () => {
      duringWait = undefined;
      await h.database.db.execute(sql`
        INSERT INTO outbox (plan_id, kind, lane, priority, payload, available_at)
        SELECT plan_id, kind, lane, priority, jsonb_set(payload::jsonb, '{type}', '"plan.executing"')::text, (payload::jsonb ->> 'at')::timestamptz FROM outbox
        WHERE plan_id = ${plan.id} AND kind = ${HOME_SINK}`);
    };
    await drainWith();
    expect(duringWait).toBeUndefined();
    expect(await homeRows()).toEqual([]);
    expect(publishesTo("U0SOLO")).toBe(2);
    expect(JSON.stringify(slack.homeOf("U0SOLO")!.blocks)).toContain(plan.id);
  });
});
