import type { ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { App, LogLevel } from "@slack/bolt";
import { sql } from "drizzle-orm";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { HonoReceiver } from "../../src/slack/hono-receiver.ts";
import type { Database } from "../../src/store/db.ts";
import { postgresKind } from "../support/databases.ts";
import { mergeRequest, READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { SlackRequests } from "../support/slack-requests.ts";
import { holdPlanRows, lockWaiters } from "../support/hold-plan-rows.ts";
import { waitFor } from "../support/wait-for.ts";

const SIGNING_SECRET = "slack-signing-secret-for-ack-tests";
const REVIEW = "C0REVIEW";

describe("HonoReceiver: the ack is written before the listener goes on", () => {
  const order: string[] = [];
  let answering: ServerResponse | undefined;
  let server: ServerType | undefined;
  let requests: SlackRequests;

  beforeAll(async () => {
    const receiver = new HonoReceiver(SIGNING_SECRET, silentLogger, () => new Date());
    // botId/botUserId given: Bolt then asks Slack nothing (no auth.test) before a listener runs.
    const app = new App({
      token: "xoxb-unused",
      botId: "B0BOT",
      botUserId: "U0BOT",
      tokenVerificationEnabled: false,
      receiver,
      deferInitialization: true,
      logLevel: LogLevel.ERROR,
    });
    await app.init();
    app.action("approve", async ({ ack }) => {
      await ack();
      // Node has handed the whole answer to the socket when writableFinished is set (its
      // 'finish' event follows on a later tick).
      order.push(answering?.writableFinished ? "listener resumed, answer written" : "listener resumed, answer not yet written");
    });
    // An ack whose answer cannot be made (a BigInt is not JSON) must not leave Slack unanswered.
    app.action("unserialisable", async ({ ack }) => {
      await (ack as (response: unknown) => Promise<void>)({ n: 1n }).catch(() => order.push("the ack threw"));
    });
    const hono = new Hono();
    hono.post("/slack/events", (c) => receiver.handle(c));
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: hono.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    server!.on("request", (_req, res) => (answering = res));
    requests = new SlackRequests({ baseUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
  });
  afterAll(async () => {
    const running = server;
    if (running) await new Promise<void>((resolve) => running.close(() => resolve()));
  });

  it("ack() returns once Node has handed the answer to the socket", async () => {
    const res = await requests.blockAction({ user: "U0ALICE", actionId: "approve", value: "{}", channelId: REVIEW, messageTs: "1.1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe("0");
    await waitFor("the listener to go on", () => order.length > 0);
    // Before, the listener went on in the same microtask run as the answer, ahead of its write.
    expect(order).toEqual(["listener resumed, answer written"]);
  });

  it("an ack whose answer cannot be made leaves the deadline's empty 200 to answer", async () => {
    order.length = 0;
    const res = await requests.blockAction({ user: "U0ALICE", actionId: "unserialisable", value: "{}", channelId: REVIEW, messageTs: "1.2" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    expect(order).toEqual(["the ack threw"]);
  });
});

describe.skipIf(!postgresKind)("Slack clicks on PostgreSQL: acknowledged before their decisions, and a stopping server waits for them", () => {
  let database: Database;
  let target: JsonResourceServer;
  let slack: SlackEmulator;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    database = await postgresKind!.open();
    target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1, email: "ana@old.example" } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
    await target.start();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
    const config = {
      ...testConfig({ crm: targetConfig(target.url) }),
      slack: {
        enabled: true as const,
        botToken: slack.botToken,
        signingSecret: SIGNING_SECRET,
        appToken: undefined,
        apiUrl: slack.url,
        reviewChannel: REVIEW,
        escalationChannel: undefined,
      },
    };
    server = await runServer({ config, logger: silentLogger, database, grantKey: (await testGrantKeys()).signing, sweepMs: 3_600_000, remindMs: 3_600_000 });
  });
  afterAll(async () => {
    await server?.close();
    await slack?.stop();
    await target?.stop();
    await database?.close();
  });

  it("clicks on plans whose rows another connection holds get their 200 at once; stopping waits for the decisions, which land once the rows are free", async () => {
    const agent = await addAgent(server!.ctx, { name: "ack-agent" });
    const plans: PlanView[] = [];
    for (let i = 0; i < 6; i++) plans.push((await submitPlan(server!.ctx, { agent, request: mergeRequest({ idempotencyKey: `held-${i}` }) })).plan);
    const ids = plans.map((p) => p.id);
    const hold = await holdPlanRows(database, ids);
    let released = false;
    try {
      const clicks = new SlackRequests({ baseUrl: server!.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
      const approvers = ["U0ALICE", "U0BOB", "U0CAROL"];
      const acks = await Promise.all(
        plans.map((p, i) =>
          clicks.blockAction({
            user: approvers[i % 3]!,
            actionId: "approve",
            value: JSON.stringify({ planId: p.id, hash: p.hash }),
            channelId: REVIEW,
            messageTs: `1.${i}`,
          }),
        ),
      );
      expect(acks.map((r) => r.status)).toEqual(plans.map(() => 200));
      // Written straight to the socket by the receiver, still with the request's id, and empty.
      expect(acks.map((r) => /^[0-9a-f-]{36}$/.test(r.headers.get("x-request-id") ?? ""))).toEqual(plans.map(() => true));
      expect(await Promise.all(acks.map((r) => r.text()))).toEqual(plans.map(() => ""));
      await waitFor("a decision waiting for a held row", async () => (await lockWaiters(database)) > 0);
      const recorded = async () => (await database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM decisions WHERE plan_id IN ${ids}`))[0]!.n;
      expect(await recorded()).toBe(0);

      let closed = false;
      const closing = server!.close().then(() => (closed = true));
      server = undefined;
      await waitFor("the HTTP server to stop taking requests", () =>
        fetch(clicks.url, { method: "POST" }).then(
          () => false,
          () => true,
        ),
      );
      expect(await lockWaiters(database)).toBeGreaterThan(0); // still held, so close() must still be waiting
      expect(closed).toBe(false);

      released = true;
      await hold.release();
      await closing;
      expect(await recorded()).toBe(6);
      const statuses = await database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id IN ${ids}`);
      expect(statuses.map((s) => s.status)).toEqual(plans.map(() => "approved"));
      expect(slack.ephemerals).toEqual([]); // nobody was told anything went wrong
    } finally {
      if (!released) await hold.release();
    }
  });
});
