import { describe, expect, it } from "vitest";
import { laneHealth } from "../../src/service/lane-health.ts";
import { DeliveryError, deliverDue, type OutboxHandler } from "../../src/service/outbox.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import { databaseKinds } from "../support/databases.ts";
import { mergeRequest, targetConfig } from "../support/harness.ts";
import { useHarness } from "../support/use-harness.ts";

/**
 * The numbers the visibility page and the metrics read, on a real database: each lane's backlog,
 * the age of its oldest undelivered event (business time, from ctx.clock), its dead rows, and a
 * Retry-After hold, as the real delivery code leaves them.
 */
describe.each(databaseKinds)("lane health on $name", (kind) => {
  const h = useHarness(kind, { sinks: ["slack", "webhook"], targets: (url) => ({ crm: targetConfig(url, { policy: { reviewChannel: "C0LANES" } }) }) });
  const submit = () => submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: "http://127.0.0.1:9/hook" }) }).then((r) => r.plan);
  const deliver = (handlers: Record<string, OutboxHandler>) => deliverDue(h.ctx, { handlers });
  const laneOf = async (lane: string) => (await laneHealth(h.ctx)).find((l) => l.lane === lane);
  const webhookLane = () => `webhook:${h.agent.name}`;

  it("lists nothing before anything was queued", async () => {
    expect(await laneHealth(h.ctx)).toEqual([]);
  });

  it("counts each lane's undelivered rows and the age of its oldest event", async () => {
    await submit();
    h.clock.advance(30);
    await submit();
    await submit();
    h.clock.advance(90);
    const lanes = await laneHealth(h.ctx);
    expect(lanes.map((l) => l.lane)).toEqual(["slack:C0LANES", webhookLane()]);
    for (const lane of lanes) {
      expect(lane).toMatchObject({ backlog: 3, oldestUndeliveredSeconds: 120, dead: 0, heldUntil: undefined, drainedBy: undefined });
    }
  });

  it("shows dead rows apart from the backlog, and a Retry-After hold until it passes", async () => {
    const refused: OutboxHandler = async () => { throw new DeliveryError("webhook answered 410", { permanent: true }); };
    const limited: OutboxHandler = async () => { throw new DeliveryError("ratelimited", { retryAfterMs: 30_000 }); };
    await deliver({ webhook: refused, slack: limited });
    const webhook = await laneOf(webhookLane());
    expect(webhook).toMatchObject({ backlog: 0, oldestUndeliveredSeconds: 0, dead: 3, heldUntil: undefined });
    const slack = await laneOf("slack:C0LANES");
    expect(slack).toMatchObject({ backlog: 3, dead: 0, drainedBy: undefined });
    expect(slack?.heldUntil).toEqual(new Date(h.clock.now().getTime() + 30_000));
    h.clock.advance(31);
    expect((await laneOf("slack:C0LANES"))?.heldUntil).toBeUndefined();
  });

  it("empties a lane's backlog as its rows are delivered, oldest first", async () => {
    const delivered: string[] = [];
    await deliver({ slack: async (event) => { delivered.push(event.planId); } });
    expect(delivered).toHaveLength(3);
    expect(await laneOf("slack:C0LANES")).toMatchObject({ backlog: 0, oldestUndeliveredSeconds: 0, dead: 0 });
    await submit();
    h.clock.advance(5);
    expect(await laneOf("slack:C0LANES")).toMatchObject({ backlog: 1, oldestUndeliveredSeconds: 5 });
  });
});
