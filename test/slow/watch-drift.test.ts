import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import type { Database } from "../../src/store/db.ts";
import { databaseKinds } from "../support/databases.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

const INTERVAL_S = 2;
const EXECUTOR_TOKEN = "executor-token-drift-0123456789";
const REVIEW = "C0REVIEW";
const kind = databaseKinds.at(-1)!; // PostgreSQL when there is one

/**
 * A target edited while a plan is pending: the whole server over real HTTP (agent
 * API, webhook receiver, Slack emulator, target), watching its target every 2 s. Someone edits
 * the resource behind Countersign's back: within two intervals the plan is stale with nothing
 * written, the agent's wait, GET and webhook say so with what changed, and the Slack message
 * has lost its buttons and says what changed. A target that goes down keeps its plan pending
 * and the message says since when it could not be re-checked.
 */
describe(`a target edited while a plan is pending (${kind.name})`, () => {
  let database: Database;
  let target: JsonResourceServer;
  let slack: SlackEmulator;
  let server: RunningServer;
  let hooks: Server;
  const webhooks: { status: string; outcome?: unknown }[] = [];
  let key = "";
  let hookUrl = "";

  beforeAll(async () => {
    database = await kind.open();
    target = new JsonResourceServer({
      seed: { "/contacts/1": { id: 1, email: "ana@old.example" }, "/contacts/2": { id: 2, email: "bruno@old.example" } },
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await target.start();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
    hooks = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      webhooks.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as { status: string });
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => hooks.listen(0, "127.0.0.1", r));
    hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
    const config = {
      // "quiet" is not watched: only a click re-reads it.
      ...testConfig({
        crm: targetConfig(target.url, { watch: { intervalSeconds: INTERVAL_S } }),
        quiet: targetConfig(target.url, { watch: { intervalSeconds: 0 } }),
      }),
      executorToken: EXECUTOR_TOKEN,
      webhooks: { allowedHosts: [new URL(hookUrl).host], agents: {} },
      slack: {
        enabled: true as const,
        botToken: slack.botToken,
        signingSecret: "slack-signing-secret-for-tests",
        appToken: undefined,
        apiUrl: slack.url,
        reviewChannel: REVIEW,
      },
    };
    server = await runServer({
      config,
      logger: silentLogger,
      database,
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
      watchMs: 200,
    });
    key = (await addAgent(server.ctx, { name: "drift-agent" })).key;
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await new Promise<void>((r) => (hooks ? hooks.close(() => r()) : r()));
    await slack?.stop();
    await target?.stop();
    await database?.close();
  });

  const api = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}/v1${path}`, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
    return { status: res.status, body: (await res.json()) as PlanView };
  };
  const propose = async (path: string, targetName = "crm") => {
    const { status, body } = await api("/plans", {
      method: "POST",
      body: JSON.stringify({
        title: `Update ${path}`,
        callbackUrl: hookUrl,
        actions: [{ kind: "http.json", target: targetName, path, op: "merge", body: { email: "new@example.com" } }],
      }),
    });
    expect(status).toBe(201);
    return body;
  };
  const messageOf = async (plan: PlanView) => {
    const ts = await waitFor(
      `the preview of ${plan.id}`,
      async () => (await database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${plan.id}`))[0]?.ts,
    );
    return () => slack.message(REVIEW, ts)!;
  };
  const approveValue = (m: SlackMessage) =>
    (JSON.parse(JSON.stringify(m.blocks ?? [])) as { type: string; elements?: { action_id: string; value: string }[] }[])
      .flatMap((b) => (b.type === "actions" ? (b.elements ?? []) : []))
      .find((e) => e.action_id === "approve")!.value;
  const buttonsOf = (blocks: unknown[] | undefined) => JSON.stringify(blocks ?? []).match(/"action_id":"(approve|reject)"/g) ?? [];

  it("stale within two intervals, nothing written; wait, GET, webhook and Slack all say what changed", async () => {
    const plan = await propose("/contacts/1");
    const message = await messageOf(plan);
    expect(buttonsOf(message().blocks)).toHaveLength(2);
    // The agent is waiting for a decision when the edit happens.
    const waiting = api(`/plans/${plan.id}/wait?timeout=20`);

    const editedAt = Date.now();
    target.set("/contacts/1", { id: 1, email: "ana@someone-else.example" });
    const stale = await waitFor(
      "the plan to go stale",
      async () => ((await api(`/plans/${plan.id}`)).body.status === "stale" ? Date.now() : undefined),
      30_000,
    );
    console.log(`watched plan stale ${stale - editedAt} ms after the edit (interval ${INTERVAL_S * 1000} ms)`);
    expect(stale - editedAt).toBeLessThan(2 * INTERVAL_S * 1000 + 1000); // + one poll of slack in the measurement
    expect(target.writes()).toEqual([]);

    const told = (await waiting).body;
    expect(told.status).toBe("stale");
    const said = {
      status: "stale",
      actions: [{ status: "stale", changedSincePreview: [{ path: "/email", from: "ana@old.example", to: "ana@someone-else.example" }] }],
    };
    expect(told.outcome).toMatchObject(said);
    expect((await api(`/plans/${plan.id}`)).body.outcome).toMatchObject(said);
    const hook = await waitFor("the stale webhook", () => webhooks.find((w) => w.status === "stale"));
    expect(hook.outcome).toMatchObject(said);

    const updated = await waitFor("the Slack message to lose its buttons", () => {
      const m = message();
      return buttonsOf(m.blocks).length === 0 && /Stale/.test(JSON.stringify(m.blocks)) ? m : undefined;
    });
    expect(JSON.stringify(updated.blocks)).toContain('is now `\\"ana@someone-else.example\\"`, was `\\"ana@old.example\\"` when you were asked');
  }, 90_000);

  it("a target that goes down keeps the plan pending; its message and GET say since when it could not be re-checked", async () => {
    const plan = await propose("/contacts/2");
    const message = await messageOf(plan);
    target.failWith = { status: 503, body: "maintenance" };
    try {
      const failing = await waitFor(
        "the watch to record a failure",
        async () => (await api(`/plans/${plan.id}`)).body.watch?.failingSince ?? undefined,
        30_000,
      );
      expect((await api(`/plans/${plan.id}`)).body.status).toBe("pending");
      expect(Date.parse(failing)).toBeGreaterThan(0);
      // The message is updated when re-reads start failing, not only at the next decision.
      await waitFor("the Slack context line", () => /Could not re-check the target since/.test(JSON.stringify(message().blocks)) || undefined, 30_000);
      expect(buttonsOf(message().blocks)).toHaveLength(2);
    } finally {
      target.failWith = undefined;
    }
    await waitFor("the watch to recover", async () => ((await api(`/plans/${plan.id}`)).body.watch?.failingSince === null ? true : undefined), 30_000);
    await waitFor("the context line to go", () => (!/Could not re-check/.test(JSON.stringify(message().blocks)) ? true : undefined), 30_000);
  }, 90_000);

  it("a click on Approve after the target changed is acknowledged, refused with what changed, and the message loses its buttons", async () => {
    target.set("/contacts/3", { id: 3, email: "caio@old.example" });
    const plan = await propose("/contacts/3", "quiet");
    const message = await messageOf(plan);
    target.set("/contacts/3", { id: 3, email: "caio@someone-else.example" });
    const door = httpInteractions(new SlackRequests({ baseUrl: server.url, signingSecret: "slack-signing-secret-for-tests", teamId: "T0TEST" }));
    const ack = await door.blockAction({ user: "U0ALICE", actionId: "approve", value: approveValue(message()), channelId: REVIEW, messageTs: message().ts });
    expect(ack.acked).toBe(true);
    const told = await waitFor("the clicker to be told", () =>
      slack.ephemerals.find((e) => e.user === "U0ALICE" && /changed since you were shown/.test(e.text ?? "")),
    );
    expect(told.text).toContain("caio@someone-else.example");
    expect(told.text).toContain("not recorded");
    expect((await api(`/plans/${plan.id}`)).body).toMatchObject({ status: "stale", approvals: [] });
    await waitFor("the Slack message to lose its buttons", () => buttonsOf(message().blocks).length === 0 || undefined);

    // A target that cannot be read at the click: recorded, and the clicker hears it was not re-checked.
    target.set("/contacts/4", { id: 4, email: "dora@old.example" });
    const other = await propose("/contacts/4", "quiet");
    const otherMessage = await messageOf(other);
    target.failWith = { status: 503, body: "maintenance" };
    try {
      await door.blockAction({ user: "U0ALICE", actionId: "approve", value: approveValue(otherMessage()), channelId: REVIEW, messageTs: otherMessage().ts });
      await waitFor("the clicker to hear it was not re-checked", () =>
        slack.ephemerals.find((e) => e.user === "U0ALICE" && /could not re-check/.test(e.text ?? "")),
      );
    } finally {
      target.failWith = undefined;
    }
    expect((await api(`/plans/${other.id}`)).body).toMatchObject({
      status: "approved",
      approvals: [{ userId: "U0ALICE", recheckFailed: expect.stringMatching(/HTTP 503/) }],
    });
    await waitFor("the message to mark the approval", () => /Approved without a re-check/.test(JSON.stringify(otherMessage().blocks)) || undefined);
  }, 90_000);

  it("a target edited between the click's re-read and its transaction: the approval stands, the executor still refuses, one stale outcome", async () => {
    target.set("/contacts/5", { id: 5, email: "eva@old.example" });
    const plan = await propose("/contacts/5", "quiet");
    const message = await messageOf(plan);
    // The click's re-read is answered with the state it saw; the edit lands right behind it.
    target.beforeAnswer = (request) => {
      if (request.method === "GET" && request.path === "/contacts/5") {
        target.beforeAnswer = undefined;
        target.set("/contacts/5", { id: 5, email: "eva@sneaky.example" });
      }
    };
    const door = httpInteractions(new SlackRequests({ baseUrl: server.url, signingSecret: "slack-signing-secret-for-tests", teamId: "T0TEST" }));
    expect(
      (await door.blockAction({ user: "U0ALICE", actionId: "approve", value: approveValue(message()), channelId: REVIEW, messageTs: message().ts })).acked,
    ).toBe(true);
    await waitFor("the approval", async () => ((await api(`/plans/${plan.id}`)).body.status === "approved" ? true : undefined));
    expect(target.get("/contacts/5")).toEqual({ id: 5, email: "eva@sneaky.example" });

    // (The executor also applies the plan approved without a re-check in the test before.)
    const writesTo = () => target.writes().filter((w) => w.path === "/contacts/5").length;
    const executor = runExecutor({
      server: executorServer(server.url, EXECUTOR_TOKEN),
      keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
      environment: "test",
      targets: { quiet: targetConfig(target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
    });
    try {
      const done = await waitFor("the executor's outcome", async () => {
        const view = (await api(`/plans/${plan.id}`)).body;
        return view.status === "stale" ? view : undefined;
      });
      expect(done.outcome).toMatchObject({
        status: "stale",
        actions: [{ status: "stale", changedSincePreview: [{ path: "/email", from: "eva@old.example", to: "eva@sneaky.example" }] }],
      });
    } finally {
      await executor.stop();
    }
    expect(writesTo()).toBe(0);
    const events = await database.rows<{ type: string }>(sql`SELECT type FROM audit_events WHERE plan_id = ${plan.id} ORDER BY id`);
    expect(events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing", "plan.stale"]);
  }, 90_000);
});
