import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceContext } from "../../../src/service/context.ts";
import { HOME_SINK } from "../../../src/service/records/home-events.ts";
import { laneHealth } from "../../../src/service/delivery/lane-health.ts";
import { startOutboxWorker } from "../../../src/service/delivery/outbox-worker.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { deliveryClient } from "../../../src/slack/deliver.ts";
import { homeSink } from "../../../src/slack/home-publish.ts";
import { pglite } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { useHarness } from "../../support/use-harness.ts";
import { waitFor } from "../../support/wait-for.ts";

/**
 * The Home publisher against Slack's per-user limit on views.publish (the emulator enforcing it):
 * a publish refused with 429 holds the slack_home lane for its Retry-After, and the Home is
 * published after it, never before. Real clock: the emulator's limit and the lane's hold both
 * count real time.
 */
describe("App Home publishing under views.publish's rate limit", () => {
  const h = useHarness(pglite, { sinks: [HOME_SINK] });
  // One publish per person, then one every 2 s: the second plan's Homes wait their Retry-After.
  const slack = new SlackEmulator({ teamId: "T0TEST", homeRateLimit: { perSecond: 0.5, burst: 1 } });
  let worker: { stop(): Promise<void> } | undefined;
  let ctx: ServiceContext;
  beforeAll(async () => {
    await slack.start();
    ctx = { ...h.ctx, clock: () => new Date() };
  });
  afterAll(async () => {
    await worker?.stop();
    await slack.stop();
  });
  const listed = (user: string) => (JSON.stringify(slack.homeOf(user)?.blocks ?? []).match(/"action_id":"approve"/g) ?? []).length;

  it("waits out the Retry-After on a 429 and then publishes every approver's whole Home", async () => {
    const failures: unknown[] = [];
    const report = {
      failed: (err: unknown) => {
        failures.push(err);
      },
    };
    worker = startOutboxWorker(ctx, { handlers: { [HOME_SINK]: homeSink(ctx, deliveryClient(slack.botToken, slack.url)) }, intervalMs: 50, report });
    await submitPlan(ctx, { agent: h.agent, request: mergeRequest() });
    await waitFor("the first plan on Alice's Home", () => listed("U0ALICE") === 1);
    await submitPlan(ctx, { agent: h.agent, request: mergeRequest() });
    await waitFor("Slack to refuse a publish", () => slack.homeRateLimited.refused > 0);
    // The emulator counts the refusal before the worker has read the 429 and written the hold;
    // laneHealth names a hold only while it lasts, so seeing one is the check.
    const held = await waitFor("the Home lane held for the Retry-After", async () => {
      const lane = (await laneHealth(ctx)).find((l) => l.lane === HOME_SINK);
      return lane?.heldUntil !== undefined && lane;
    });
    expect(held.backlog).toBe(1);
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL"]) await waitFor(`both plans on ${user}'s Home`, () => listed(user) === 2);
    expect(slack.homeRateLimited.early).toBe(0);
    await waitFor("the Home row delivered", async () => (await laneHealth(ctx)).find((l) => l.lane === HOME_SINK)?.backlog === 0);
    expect((await laneHealth(ctx)).find((l) => l.lane === HOME_SINK)?.dead).toBe(0);
    expect(failures).toEqual([]);
  });
});
