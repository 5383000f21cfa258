import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../../src/config/load.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { deliverDue } from "../../../src/service/delivery/outbox-drain.ts";
import { type DeliveryPolicy, type OutboxHandler } from "../../../src/service/delivery/sink-contract.ts";
import { type PlanEvent } from "../../../src/service/records/outbox.ts";
import { reviewChannelOf } from "../../../src/service/records/outbox-lanes.ts";
import { startOutboxWorker } from "../../../src/service/delivery/outbox-worker.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { deliveryClient, slackSink } from "../../../src/slack/deliver.ts";
import { openDatabase, type Database } from "../../../src/store/db.ts";
import { outbox, outboxLanes, plans } from "../../../src/store/schema.ts";
import { recordPlanEvent } from "../../../src/service/lifecycle/transition.ts";
import { webhookSink } from "../../../src/webhooks/webhook-sink.ts";
import { postgresKind } from "../../support/databases.ts";
import { FakeSlackApi } from "../../support/fake-slack-api.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";
import { waitFor } from "../../support/wait-for.ts";

/** A harness whose "crm" and "ops" targets are reviewed in channels of their own (a lane each). */
const channels = (crm: string, ops: string) => ({
  targets: (url: string) => ({ crm: targetConfig(url, { policy: { reviewChannel: crm } }), ops: targetConfig(url, { policy: { reviewChannel: ops } }) }),
});

/** Webhooks over real HTTP: each POST's status and when it arrived. */
class WebhookReceiver {
  readonly got: { status: string; planId: string; at: number }[] = [];
  private server: Server | undefined;
  url = "";
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        const payload = JSON.parse(body) as { status: string; planId: string };
        this.got.push({ status: payload.status, planId: payload.planId, at: Date.now() });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }
  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }
}

/** Lanes need concurrent connections to show anything: PostgreSQL only (PGlite runs one query at a time). */
describe.skipIf(!postgresKind)("outbox lanes on postgres", () => {
  const h = useHarness(postgresKind!, channels("C0LIMITED", "C0UNUSED"));
  const parallel = h.another(channels("C0PARA", "C0PARB"));
  const ordering = h.another(channels("C0ORDER", "C0UNUSED"));
  const quorum2 = h.another({ ...channels("C0COAL", "C0UNUSED"), defaults: { requiredApprovals: 2 } });
  const fake = new FakeSlackApi();
  const receiver = new WebhookReceiver();
  beforeAll(async () => {
    await fake.start();
    await receiver.start();
    for (const hv of [h, parallel, ordering, quorum2]) hv.ctx.config.webhooks.allowedHosts.push(new URL(receiver.url).host);
  });
  afterAll(async () => {
    await fake.stop();
    await receiver.stop();
  });

  /** The harness's context with Slack configured, these sinks, and the wall clock (leases and Retry-After are real time here). */
  function slackCtx(hv: HarnessView, sinks: string[]): ServiceContext {
    const slack = {
      enabled: true,
      botToken: "xoxb-test",
      signingSecret: "secret",
      appToken: undefined,
      apiUrl: fake.url,
      reviewChannel: "C0DEFAULT",
    } as unknown as Config["slack"];
    return { ...hv.ctx, clock: () => new Date(), sinks, config: { ...hv.ctx.config, slack } };
  }
  const realSinks = (ctx: ServiceContext): Record<string, OutboxHandler> => ({
    slack: slackSink(ctx, { client: deliveryClient("xoxb-test", fake.url), channelOf: (doc) => reviewChannelOf(ctx.config, doc)! }),
    webhook: webhookSink(ctx),
  });
  const approve = (ctx: ServiceContext, plan: { id: string; hash: string }, userId: string) =>
    decide(ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "web" }, verdict: "approve" });
  const rowsOf = (planId: string, kind: string) =>
    h.database.db
      .select()
      .from(outbox)
      .where(and(eq(outbox.planId, planId), eq(outbox.kind, kind)))
      .orderBy(asc(outbox.id));

  it("names each row's lane when it is written: slack:<review channel>, webhook:<agent>, a preview first in its lane", async () => {
    const ctx = slackCtx(parallel, ["slack", "webhook"]);
    const { plan } = await submitPlan(ctx, {
      agent: parallel.agent,
      request: mergeRequest({
        callbackUrl: receiver.url,
        actions: [{ kind: "http.json", target: "ops", path: "/contacts/2", op: "merge", body: { name: "B" } }],
      }),
    });
    const rows = await h.database.db
      .select({ kind: outbox.kind, lane: outbox.lane, priority: outbox.priority })
      .from(outbox)
      .where(eq(outbox.planId, plan.id))
      .orderBy(asc(outbox.kind));
    expect(rows).toEqual([
      { kind: "slack", lane: "slack:C0PARB", priority: 0 },
      { kind: "webhook", lane: `webhook:${parallel.agent.name}`, priority: 1 },
    ]);
    await approve(ctx, plan, "U0ALICE");
    const later = await rowsOf(plan.id, "slack");
    expect(later.map((r) => [r.lane, r.priority])).toEqual([
      ["slack:C0PARB", 0],
      ["slack:C0PARB", 1],
      ["slack:C0PARB", 1],
    ]);
    // Delivered here so that the lane is empty for the test below.
    await deliverDue(ctx, { handlers: { slack: async () => {}, webhook: async () => {} } });
  });

  it("a Slack lane answering 429 with Retry-After 30 does not delay webhooks", async () => {
    fake.rateLimit("C0LIMITED", 30);
    const ctx = slackCtx(h, ["slack", "webhook"]);
    const errors: unknown[] = [];
    const worker = startOutboxWorker(ctx, { handlers: realSinks(ctx), intervalMs: 50, report: { failed: (err) => errors.push(err) } });
    try {
      const { plan } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: receiver.url }) });
      await waitFor("Slack to refuse the preview with 429", () => fake.callsOf("chat.postMessage", "C0LIMITED").length >= 1);
      await waitFor("the webhook of the submitted plan", () => receiver.got.some((g) => g.planId === plan.id && g.status === "pending"));

      const decidedAt = Date.now();
      await approve(ctx, plan, "U0ALICE");
      const approved = await waitFor("the webhook of the approval", () => receiver.got.find((g) => g.planId === plan.id && g.status === "approved"));
      // The channel asked for 30 s; the webhook lane did not wait for them.
      expect(approved.at - decidedAt).toBeLessThan(30_000);
      // The Slack lane is still held: one try, its rows undelivered, the lane leased out to the Retry-After.
      expect(fake.callsOf("chat.postMessage", "C0LIMITED")).toHaveLength(1);
      const slackRows = await rowsOf(plan.id, "slack");
      expect(slackRows.every((r) => r.deliveredAt === null)).toBe(true);
      expect(slackRows[0]!.lastError).toContain("Retry-After 30");
      const [lane] = await h.database.db.select().from(outboxLanes).where(eq(outboxLanes.lane, "slack:C0LIMITED"));
      expect(lane!.leasedUntil.getTime()).toBeGreaterThanOrEqual(fake.callsOf("chat.postMessage", "C0LIMITED")[0]!.at + 29_000);
      expect(errors).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it("two channels drain in parallel", async () => {
    const ctx = slackCtx(parallel, ["slack"]);
    await submitPlan(ctx, { agent: parallel.agent, request: mergeRequest({ title: "for crm" }) });
    await submitPlan(ctx, {
      agent: parallel.agent,
      request: mergeRequest({ title: "for ops", actions: [{ kind: "http.json", target: "ops", path: "/contacts/2", op: "merge", body: { name: "B" } }] }),
    });
    let inFlight = 0;
    let most = 0;
    const titles: string[] = [];
    // Each delivery waits until the other channel's has started: one lane at a time would time out here.
    const slack: OutboxHandler = async (event) => {
      inFlight++;
      most = Math.max(most, inFlight);
      titles.push(String(event.data?.title));
      try {
        await waitFor("the other channel's delivery to start at the same time", () => most >= 2, 30_000);
      } finally {
        inFlight--;
      }
    };
    expect(await deliverDue(ctx, { handlers: { slack } })).toBe(2);
    expect(most).toBe(2);
    expect(titles.sort()).toEqual(["for crm", "for ops"]);
  });

  it("posts a preview before older plans' thread replies in its channel, each plan still in order", async () => {
    const ctx = slackCtx(ordering, ["slack"]);
    const seen: string[] = [];
    const slack: OutboxHandler = async (event) => {
      seen.push(`${names.get(event.planId)}:${event.type}`);
    };
    const names = new Map<string, string>();
    const submit = async (name: string) => {
      const { plan } = await submitPlan(ctx, { agent: ordering.agent, request: mergeRequest({ title: name }) });
      names.set(plan.id, name);
      return plan;
    };
    const older = await submit("older");
    expect(await deliverDue(ctx, { handlers: { slack } })).toBe(1);
    await approve(ctx, older, "U0ALICE");
    await submit("newer");
    await submit("newest");
    expect(await deliverDue(ctx, { handlers: { slack } })).toBe(4);
    expect(seen).toEqual(["older:plan.submitted", "newer:plan.submitted", "newest:plan.submitted", "older:decision.approve", "older:plan.approved"]);
  });

  it("coalesces a plan's queued transitions into one thread reply listing them in order and one update, delivered in one statement", async () => {
    const ctx = slackCtx(quorum2, ["slack"]);
    const handlers = realSinks(ctx);
    const { plan } = await submitPlan(ctx, { agent: quorum2.agent, request: mergeRequest() });
    expect(await deliverDue(ctx, { handlers })).toBe(1);
    const [preview] = fake.callsOf("chat.postMessage", "C0COAL");
    expect(preview!.params.thread_ts).toBeUndefined();

    await approve(ctx, plan, "U0ALICE");
    await approve(ctx, plan, "U0BOB");
    expect(await deliverDue(ctx, { handlers })).toBe(3);

    const replies = fake.callsOf("chat.postMessage", "C0COAL").filter((c) => c.params.thread_ts !== undefined);
    expect(replies).toHaveLength(1);
    expect(replies[0]!.params.text).toBe("approval 1 of 2 by <@U0ALICE> → approval 2 of 2 by <@U0BOB> → approved by <@U0ALICE> <@U0BOB>");
    // Each transition's own reply line follows, in order: the thread stays a faithful lifecycle.
    const texts = (JSON.parse(replies[0]!.params.blocks!) as { text?: { text: string } }[]).map((b) => b.text?.text ?? "");
    const at = (needle: string) => texts.findIndex((t) => t.includes(needle));
    expect(at("Approval 1 of 2")).toBeGreaterThan(0);
    expect(at("Approval 2 of 2")).toBeGreaterThan(at("Approval 1 of 2"));
    expect(at("Approved")).toBeGreaterThan(at("Approval 2 of 2"));
    expect(fake.callsOf("chat.update", "C0COAL")).toHaveLength(1);

    const rows = await rowsOf(plan.id, "slack");
    expect(rows.map((r) => (r.payload as PlanEvent).type)).toEqual(["plan.submitted", "decision.approve", "decision.approve", "plan.approved"]);
    const delivered = new Set(rows.slice(1).map((r) => r.deliveredAt?.getTime()));
    expect(delivered.size).toBe(1);
    expect([...delivered][0]).toEqual(expect.any(Number));
    expect(rows.slice(1).map((r) => r.attempts)).toEqual([1, 1, 1]);
  });

  it("delivers a reminder alone, splitting the transitions queued around it", async () => {
    const ctx = slackCtx(quorum2, ["slack"]);
    const handlers = realSinks(ctx);
    const { plan } = await submitPlan(ctx, { agent: quorum2.agent, request: mergeRequest({ title: "reminded between votes" }) });
    expect(await deliverDue(ctx, { handlers })).toBe(1);
    const [preview] = fake.callsOf("chat.postMessage", "C0COAL").filter((c) => c.params.text?.includes("reminded between votes"));
    await approve(ctx, plan, "U0ALICE");
    await ctx.database.db.transaction(async (tx) => {
      const [row] = await tx.select().from(plans).where(eq(plans.id, plan.id)).for("update");
      await recordPlanEvent(ctx, tx, row!, "plan.reminder", { type: "system", process: "reminders" }, ctx.clock(), {
        missing: ["U0BOB"],
        approvals: 1,
        requiredApprovals: 2,
      });
    });
    await approve(ctx, plan, "U0BOB");
    expect(await deliverDue(ctx, { handlers })).toBe(4);
    const texts = fake
      .callsOf("chat.postMessage", "C0COAL")
      .filter((c) => c.params.thread_ts !== undefined && c.at >= preview!.at)
      .map((c) => c.params.text);
    expect(texts).toEqual([
      "👍 Approval 1 of 2 by <@U0ALICE>",
      expect.stringMatching(/^⏰ Still waiting: 1 of 2 approval\(s\); expires .* <@U0BOB>$/),
      "approval 2 of 2 by <@U0BOB> → approved by <@U0ALICE> <@U0BOB>",
    ]);
  });

  describe("two replicas", () => {
    let second: Database | undefined;
    beforeAll(async () => {
      const [{ name }] = (await h.database.rows<{ name: string }>(sql`SELECT current_database() AS name`)) as [{ name: string }];
      const url = new URL(process.env.TEST_DATABASE_URL!);
      url.pathname = `/${name}`;
      second = await openDatabase({ kind: "postgres", url: url.toString() });
    });
    afterAll(async () => {
      await second?.close();
    });

    it("deliver each row exactly once, each plan in order, when two delivery loops on two connections contend", async () => {
      const kinds = ["rep-a", "rep-b", "rep-c", "rep-d", "rep-e"];
      const ctx = { ...h.ctx, sinks: kinds };
      const submitted = [];
      for (let i = 0; i < 30; i++) submitted.push((await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `replica plan ${i}` }) })).plan);
      for (const plan of submitted.slice(0, 15)) await approve(ctx, plan, "U0ALICE");
      const expected = await h.database.db.$count(outbox, and(inArray(outbox.kind, kinds), isNull(outbox.deliveredAt)));
      expect(expected).toBe(30 * 5 + 15 * 5 * 2);

      const deliveries = new Map<number, number>();
      const order: { replica: number; planId: string; kind: string; id: number }[] = [];
      const handlersOf = (replica: number) =>
        Object.fromEntries(
          kinds.map((kind) => [
            kind,
            (async (event, row) => {
              deliveries.set(row.id, (deliveries.get(row.id) ?? 0) + 1);
              order.push({ replica, planId: event.planId, kind, id: row.id });
              await new Promise((r) => setImmediate(r));
            }) as OutboxHandler,
          ]),
        );
      const undelivered = () => h.database.db.$count(outbox, and(inArray(outbox.kind, kinds), isNull(outbox.deliveredAt)));
      const loop = async (replica: number, database: Database) => {
        const deadline = Date.now() + 120_000;
        while ((await undelivered()) > 0) {
          if (Date.now() > deadline) throw new Error(`replica ${replica} gave up with rows undelivered`);
          await deliverDue({ database, clock: () => new Date() }, { handlers: handlersOf(replica), lanes: 3, batch: 5 });
        }
      };
      await Promise.all([loop(1, h.database), loop(2, second!)]);

      expect(deliveries.size).toBe(expected);
      expect([...deliveries.values()].every((n) => n === 1)).toBe(true);
      expect(new Set(order.map((o) => o.replica))).toEqual(new Set([1, 2]));
      // Within a plan and sink, rows were delivered in the order they were written.
      const byPlanKind = new Map<string, number[]>();
      for (const o of order) byPlanKind.set(`${o.planId}/${o.kind}`, [...(byPlanKind.get(`${o.planId}/${o.kind}`) ?? []), o.id]);
      for (const ids of byPlanKind.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
    });
  });

  it("a worker that dies holding a lane leaves it to its lease: the row is delivered again after it runs out", async () => {
    const ctx = { ...h.ctx, sinks: ["dies"] };
    const { plan } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "outlives its worker" }) });
    const t = Date.now();
    const policy: DeliveryPolicy = { maxAttempts: 5, leaseMs: 60_000, backoffMs: () => 1000 };
    const at = (ms: number) => ({ ...h.ctx, clock: () => new Date(t + ms) });
    // This worker takes the lane and its row, then never finishes nor gives either back (as if killed).
    let started = 0;
    void deliverDue(at(0), {
      policy,
      handlers: {
        dies: () => {
          started++;
          return new Promise<void>(() => {});
        },
      },
    });
    await waitFor("the doomed worker to take the row", async () => started === 1 && (await rowsOf(plan.id, "dies"))[0]!.attempts === 1);

    const calls: number[] = [];
    const handlers = {
      dies: async (_: PlanEvent, row: { attempts: number }) => {
        calls.push(row.attempts);
      },
    };
    expect(await deliverDue(at(30_000), { policy, handlers })).toBe(0);
    expect(calls).toEqual([]);
    expect(await deliverDue(at(60_001), { policy, handlers })).toBe(1);
    expect(calls).toEqual([2]);
    const [row] = await rowsOf(plan.id, "dies");
    expect(row!.deliveredAt?.getTime()).toBe(t + 60_001);
  });
});
