/**
 * What App Home costs on PostgreSQL: one person's tab (homeTabFor: the 200 soonest pending plans
 * and the one rule over them), the debounce probe (coveredLater) over a queue of slack_home rows,
 * and draining a burst of those rows through the real outbox worker into the Slack emulator
 * (how many views.publish a burst of plans costs each approver).
 *   node --import tsx bench/home-tab.ts [PLANS]        (default 500; TEST_DATABASE_URL names the server)
 * A database of its own is created next to the one the URL names and dropped at the end.
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { HOME_SINK } from "../src/service/records/home-events.ts";
import { coveredLater, decidersOf, homeTabFor } from "../src/service/review/home-tab.ts";
import { HOME_SHOWN } from "../src/slack/home-view.ts";
import { deliverDue } from "../src/service/delivery/outbox-drain.ts";
import { submitPlan } from "../src/service/intake/submit-plan.ts";
import { deliveryClient } from "../src/slack/deliver.ts";
import { homeSink } from "../src/slack/home-publish.ts";
import { mergeRequest, openHarness } from "../test/support/harness.ts";
import { SlackEmulator } from "../test/support/slack-emulator.ts";
import { openThrowawayPostgres } from "../test/support/throwaway-postgres.ts";

const PLANS = Number(process.argv[2] ?? 500);
if (!Number.isInteger(PLANS) || PLANS < 1) throw new Error(`PLANS must be a positive whole number, got '${process.argv[2]}'`);
const serverUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const database = await openThrowawayPostgres(serverUrl, { prefix: "cs_bench_home" });
const slack = new SlackEmulator({ teamId: "T0TEST" });
try {
  await database.migrate();
  await slack.start();
  const h = await openHarness(database, { sinks: [HOME_SINK] });
  const client = deliveryClient(slack.botToken, slack.url);
  const load = () => os.loadavg()[0]!.toFixed(1);

  const seeded = performance.now();
  for (let i = 0; i < PLANS; i++) await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ ttlSeconds: 600 + (i % 50) * 60 }) });
  console.log(`seeded ${PLANS} pending plans (3 approvers each) in ${((performance.now() - seeded) / 1000).toFixed(1)} s, load ${load()}`);

  const median = async (runs: number, f: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await f();
      times.push(performance.now() - t);
    }
    return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!.toFixed(1);
  };
  console.log(
    `homeTabFor (one person's tab, ${PLANS} pending): median ${await median(20, () => homeTabFor(h.ctx, { userId: "U0ALICE", shown: HOME_SHOWN }))} ms, load ${load()}`,
  );
  const [first] = await database.rows<{ id: string; plan_id: string }>(sql`SELECT id, plan_id FROM outbox WHERE kind = ${HOME_SINK} ORDER BY id LIMIT 1`);
  const deciders = (await decidersOf(h.ctx, first!.plan_id))!.deciders;
  console.log(
    `coveredLater (${PLANS - 1} later rows queued): median ${await median(20, () => coveredLater(h.ctx, Number(first!.id), deciders))} ms, load ${load()}`,
  );

  const drained = performance.now();
  const handlers = { [HOME_SINK]: homeSink(h.ctx, client) };
  while ((await deliverDue(h.ctx, { handlers })) > 0);
  const publishes = slack.callsTo("views.publish").length;
  console.log(
    `drained ${PLANS} slack_home rows in ${((performance.now() - drained) / 1000).toFixed(1)} s: ${publishes} views.publish (${["U0ALICE", "U0BOB", "U0CAROL"].map((u) => `${u} ${slack.published.filter((p) => p.user === u).length}`).join(", ")}), load ${load()}`,
  );
  await h.close();
} finally {
  await slack.stop();
  await database.close();
}
