import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { ServiceContext } from "../../../src/service/context.ts";
import { laneHealth } from "../../../src/service/delivery/lane-health.ts";
import { outboxVisibility } from "../../../src/service/delivery/outbox-visibility.ts";
import { retryDelivery } from "../../../src/service/delivery/retry-delivery.ts";
import { DeliveryError, type OutboxHandler } from "../../../src/service/delivery/sink-contract.ts";
import { deliverDue } from "../../../src/service/delivery/outbox-drain.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";

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
    const refused: OutboxHandler = async () => {
      throw new DeliveryError("webhook answered 410", { permanent: true });
    };
    const limited: OutboxHandler = async () => {
      throw new DeliveryError("ratelimited", { retryAfterMs: 30_000 });
    };
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
    await deliver({
      slack: async (event) => {
        delivered.push(event.planId);
      },
    });
    expect(delivered).toHaveLength(3);
    expect(await laneOf("slack:C0LANES")).toMatchObject({ backlog: 0, oldestUndeliveredSeconds: 0, dead: 0 });
    await submit();
    h.clock.advance(5);
    expect(await laneOf("slack:C0LANES")).toMatchObject({ backlog: 1, oldestUndeliveredSeconds: 5 });
  });
});

/**
 * The page's service door: who may see the lanes (the plan read rule's "reads everything"), the
 * dead deliveries it lists, and the admin-only retry, which puts the row back in its lane and is
 * audited in the same transaction.
 */
describe.each(databaseKinds)("dead deliveries and their retry on $name", (kind) => {
  const h = useHarness(kind, { sinks: ["webhook"] });
  /** The harness's context with admins and a readers list. */
  const withRights = (): ServiceContext => ({
    ...h.ctx,
    config: { ...h.ctx.config, admins: ["U0ADMIN"], browser: { ...h.ctx.config.browser, readers: ["U0READER"] } },
  });
  const submit = () => submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: "http://127.0.0.1:9/hook" }) }).then((r) => r.plan);
  const refused: OutboxHandler = async () => {
    throw new DeliveryError("webhook answered 410 Gone", { permanent: true });
  };
  const audits = () =>
    h.database.rows<{ type: string; actor: string; data: string }>(
      sql`SELECT type, actor::text AS actor, data::text AS data FROM audit_events WHERE type = 'outbox.retried' ORDER BY id`,
    );

  it("shows every lane and the newest dead deliveries, with their plan, to admins and listed readers", async () => {
    const plan = await submit();
    await deliverDue(h.ctx, { handlers: { webhook: refused } });
    const ctx = withRights();
    for (const userId of ["U0ADMIN", "U0READER"]) {
      const seen = await outboxVisibility(ctx, { reader: { userId } });
      expect(seen.lanes).toEqual([expect.objectContaining({ lane: `webhook:${h.agent.name}`, backlog: 0, dead: 1 })]);
      expect(seen.dead).toEqual([
        expect.objectContaining({
          kind: "webhook",
          lane: `webhook:${h.agent.name}`,
          event: "plan.submitted",
          plan: { id: plan.id, title: plan.plan.title },
          attempts: 1,
          lastError: "webhook answered 410 Gone",
        }),
      ]);
      expect(seen.mayRetry).toBe(userId === "U0ADMIN");
    }
  });

  it("refuses the lanes to someone browser.readers leaves out", async () => {
    const err = await refusal(outboxVisibility(withRights(), { reader: { userId: "U0STRANGER" } }));
    expect(err).toMatchObject({ code: "not_a_reader" });
    expect(err.message).toMatch(/admins and the people in browser.readers/);
  });

  it("refuses a retry by someone who is not an admin, naming why, and changes nothing", async () => {
    const [dead] = (await outboxVisibility(withRights(), { reader: { userId: "U0ADMIN" } })).dead;
    const err = await refusal(retryDelivery(withRights(), { id: dead!.id, reader: { userId: "U0READER" } }));
    expect(err).toMatchObject({ code: "not_an_admin" });
    expect(err.message).toMatch(/only admins may retry a dead delivery.*U0ADMIN.*U0READER is not one of them/);
    expect((await laneHealth(h.ctx))[0]).toMatchObject({ backlog: 0, dead: 1 });
    expect(await audits()).toEqual([]);
  });

  it("puts an admin's retry back in its lane, due now from attempt one, audited with who, which row and which lane", async () => {
    const ctx = withRights();
    const [dead] = (await outboxVisibility(ctx, { reader: { userId: "U0ADMIN" } })).dead;
    const retried = await retryDelivery(ctx, { id: dead!.id, reader: { userId: "U0ADMIN" } });
    expect(retried).toEqual({ id: dead!.id, lane: `webhook:${h.agent.name}`, kind: "webhook", planId: dead!.plan!.id });
    expect((await laneHealth(h.ctx))[0]).toMatchObject({ backlog: 1, dead: 0 });
    const [audit, ...more] = await audits();
    expect(more).toEqual([]);
    expect(JSON.parse(audit!.actor)).toEqual({ type: "user", userId: "U0ADMIN", via: "web" });
    expect(JSON.parse(audit!.data)).toEqual({
      outboxId: dead!.id,
      lane: `webhook:${h.agent.name}`,
      kind: "webhook",
      planId: dead!.plan!.id,
      attempts: 1,
      lastError: "webhook answered 410 Gone",
    });
    // The worker delivers it again, counting attempts from one.
    const attempts: number[] = [];
    expect(
      await deliverDue(h.ctx, {
        handlers: {
          webhook: async (_event, row) => {
            attempts.push(row.attempts);
          },
        },
      }),
    ).toBe(1);
    expect(attempts).toEqual([1]);
    // A second retry of the same row finds nothing dead and records nothing.
    expect(await refusal(retryDelivery(ctx, { id: dead!.id, reader: { userId: "U0ADMIN" } }))).toMatchObject({ code: "not_found" });
    expect(await audits()).toHaveLength(1);
  });
});
