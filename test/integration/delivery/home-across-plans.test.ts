import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOME_SINK } from "../../../src/service/records/home-events.ts";
import { deliverDue } from "../../../src/service/delivery/outbox-drain.ts";
import { type OutboxHandler } from "../../../src/service/delivery/sink-contract.ts";
import { takeAcrossPlans } from "../../../src/service/delivery/outbox-lease.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { deliveryClient } from "../../../src/slack/deliver.ts";
import { slackDirectory } from "../../../src/slack/directory.ts";
import { homeSink } from "../../../src/slack/home-publish.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * The Home lane takes its queued rows across plans (OutboxHandler.acrossPlans): a burst of plans
 * is one delivery (one take, one read of the deciders, one publish per person), not four
 * statements and a probe per plan, and a plan's row that backs off holds back no other plan's.
 */
describe.each(databaseKinds)("Home rows taken across plans on $name", (kind) => {
  const h = useHarness(kind, {
    sinks: [HOME_SINK],
    targets: (url) => ({ crm: targetConfig(url), grouped: targetConfig(url, { policy: { approvers: ["S0REVIEWERS", "U0DAVE"], requiredApprovals: 1 } }) }),
  });
  const slack = new SlackEmulator({ teamId: "T0TEST" });
  beforeAll(async () => {
    await slack.start();
    slack.setUsergroup("S0REVIEWERS", ["U0GROUPIE"]);
    h.ctx.directory = slackDirectory(deliveryClient(slack.botToken, slack.url));
  });
  afterAll(() => slack.stop());

  const submit = (target = "crm") =>
    submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ actions: [{ kind: "http.json", target, path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }] }),
    }).then((r) => r.plan);
  /** The real sink, counting its deliveries (one per call, of one row or many). */
  const counted = () => {
    const sink = homeSink(h.ctx, deliveryClient(slack.botToken, slack.url));
    const deliveries: number[] = [];
    const handler: OutboxHandler = (event, row) => (deliveries.push(1), sink(event, row));
    handler.many = (events, rows) => (deliveries.push(rows.length), sink.many!(events, rows));
    handler.acrossPlans = sink.acrossPlans;
    return { handlers: { [HOME_SINK]: handler }, deliveries };
  };
  const homeRows = async () =>
    (
      await h.database.rows<{ id: number | string }>(
        sql`SELECT id FROM outbox WHERE kind = ${HOME_SINK} AND delivered_at IS NULL AND dead_at IS NULL ORDER BY id`,
      )
    ).map((r) => Number(r.id));
  const publishesTo = (user: string) => slack.published.filter((p) => p.user === user).length;

  it("a burst of plans on two targets with different approvers is one delivery: everyone concerned published once", async () => {
    slack.reset();
    expect(homeSink(h.ctx, deliveryClient(slack.botToken, slack.url)).acrossPlans).toBe(true);
    for (let i = 0; i < 8; i++) await submit(i % 2 === 0 ? "crm" : "grouped");
    expect(await homeRows()).toHaveLength(8);
    const { handlers, deliveries } = counted();
    while ((await deliverDue(h.ctx, { handlers })) > 0);
    expect(await homeRows()).toEqual([]);
    expect(deliveries).toEqual([8]);
    // crm's approvers (the harness's defaults), and grouped's: its listed user and the group's member.
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL", "U0DAVE", "U0GROUPIE"]) expect(publishesTo(user)).toBe(1);
    expect(publishesTo("U0REQUESTER")).toBe(0);
  });

  it("takes at most `max` rows in lane order, each row's attempts counted and its lease started", async () => {
    for (let i = 0; i < 5; i++) await submit();
    const queued = await homeRows();
    const at = h.clock.now();
    const first = await takeAcrossPlans(h.database, { lane: HOME_SINK, at, leaseMs: 60_000, max: 3 });
    expect(first.map((r) => r.id)).toEqual(queued.slice(0, 3));
    expect(first.every((r) => r.attempts === 1)).toBe(true);
    // Leased rows are not due again until their lease ends: the next take gets the others.
    const rest = await takeAcrossPlans(h.database, { lane: HOME_SINK, at, leaseMs: 60_000, max: 3 });
    expect(rest.map((r) => r.id)).toEqual(queued.slice(3));
    expect(await takeAcrossPlans(h.database, { lane: HOME_SINK, at, leaseMs: 60_000, max: 3 })).toEqual([]);
    await h.database.rows(sql`UPDATE outbox SET delivered_at = ${at.toISOString()} WHERE kind = ${HOME_SINK} AND delivered_at IS NULL`);
  });

  it("a plan's row backing off holds back no other plan's (the Home is rebuilt whole either way)", async () => {
    slack.reset();
    const held = await submit();
    await h.database.rows(
      sql`UPDATE outbox SET available_at = ${new Date(h.clock.now().getTime() + 3_600_000).toISOString()} WHERE kind = ${HOME_SINK} AND plan_id = ${held.id}`,
    );
    const later = await submit();
    const { handlers } = counted();
    while ((await deliverDue(h.ctx, { handlers })) > 0);
    const [heldRow] = await homeRows();
    expect(await homeRows()).toHaveLength(1);
    expect((await h.database.rows<{ plan_id: string }>(sql`SELECT plan_id FROM outbox WHERE id = ${heldRow!}`))[0]!.plan_id).toBe(held.id);
    expect(JSON.stringify(slack.homeOf("U0ALICE")!.blocks)).toContain(later.id);
    expect(JSON.stringify(slack.homeOf("U0ALICE")!.blocks)).toContain(held.id);
    await h.database.rows(sql`UPDATE outbox SET delivered_at = ${h.clock.now().toISOString()} WHERE kind = ${HOME_SINK} AND delivered_at IS NULL`);
  });

  it("a row tried before goes alone: a delivery that keeps failing for one plan is retried and dead-lettered by its own attempts, and the other plans' rows are delivered", async () => {
    slack.reset();
    const failing = await submit();
    const others = [await submit(), await submit()];
    const { handlers } = counted();
    const sink = handlers[HOME_SINK]!;
    // Fails whenever the failing plan's row is in the delivery (as an unresolvable group would).
    const fails = (events: { planId: string }[]) => {
      if (events.some((e) => e.planId === failing.id)) throw new Error(`cannot publish for ${failing.id}`);
    };
    const flaky: OutboxHandler = (event, row) => (fails([event]), sink(event, row));
    flaky.many = (events, rows) => (fails(events), sink.many!(events, rows));
    flaky.acrossPlans = true;
    const policy = { leaseMs: 60_000, maxAttempts: 3, backoffMs: () => 1000 };
    const rowsOf = async () =>
      h.database.rows<{ plan_id: string; attempts: number; delivered: boolean; dead: boolean }>(
        sql`SELECT plan_id, attempts, delivered_at IS NOT NULL AS delivered, dead_at IS NOT NULL AS dead FROM outbox WHERE kind = ${HOME_SINK} AND plan_id IN (${sql.join(
          [failing, ...others].map((p) => sql`${p.id}`),
          sql`, `,
        )}) ORDER BY id`,
      );
    // The first delivery takes all three (none tried yet) and fails as one.
    await deliverDue(h.ctx, { handlers: { [HOME_SINK]: flaky }, policy });
    expect((await rowsOf()).map((r) => [r.attempts, r.delivered])).toEqual([
      [1, false],
      [1, false],
      [1, false],
    ]);
    // From then on each goes alone: the others are delivered, the failing one dies at its own third attempt.
    for (let i = 0; i < 6; i++) {
      h.clock.advance(2);
      await deliverDue(h.ctx, { handlers: { [HOME_SINK]: flaky }, policy });
    }
    const after = await rowsOf();
    expect(after.map((r) => [r.plan_id, r.delivered, r.dead])).toEqual([
      [failing.id, false, true],
      [others[0]!.id, true, false],
      [others[1]!.id, true, false],
    ]);
    expect(after[0]!.attempts).toBe(3);
    expect(after[1]!.attempts).toBe(2);
  });
});
