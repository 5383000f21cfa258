import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EXECUTOR_ID_HEADER } from "../../src/contract/executor-api.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { announceMissingExecutors } from "../../src/service/execution/missing-executors.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { openDatabase, type Database } from "../../src/store/db.ts";
import { openThrowawayPostgres, pglite } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const REVIEW = "C0REVIEW";
const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";
/** Short, so an executor goes missing within the test; configs written in countersign.yml must say 50 or more. */
const MISSING_AFTER_SECONDS = 2;

/**
 * An approved plan nobody is applying says so, over real HTTP: `held: no_executor` from the agent
 * API and on the plan page, one thread reply per plan and one review channel message per outage
 * (the Slack emulator), `countersign_executors_connected` on /metrics; and replicas on one
 * PostgreSQL database agree, telling Slack once between them.
 */
describe("no executor connected", () => {
  let target: JsonResourceServer;
  let slack: SlackEmulator;

  beforeAll(async () => {
    target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1, email: "a@old.example" } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
    await target.start();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
  });
  afterAll(async () => {
    await slack?.stop();
    await target?.stop();
  });

  async function replica(database: Database): Promise<RunningServer> {
    const port = await freePort();
    return runServer({
      config: {
        ...testConfig({ crm: targetConfig(target.url) }),
        port,
        publicUrl: `http://127.0.0.1:${port}`,
        executorToken: EXECUTOR_TOKEN,
        executor: { leaseSeconds: 60, missingAfterSeconds: MISSING_AFTER_SECONDS, expected: true },
        slack: {
          enabled: true as const,
          botToken: slack.botToken,
          signingSecret: "slack-signing-secret",
          appToken: undefined,
          apiUrl: slack.url,
          reviewChannel: REVIEW,
        },
      },
      logger: silentLogger,
      database,
      hostname: "127.0.0.1",
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
      executorWatchMs: 100,
    });
  }

  let n = 0;
  async function approved(server: RunningServer, agent: { id: string; name: string }): Promise<PlanView> {
    const { plan } = await submitPlan(server.ctx, {
      agent,
      request: {
        title: `Waiting plan ${++n}`,
        onBehalfOf: "U0REQUESTER",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: `a${n}@new.example` } }],
      },
    });
    await decide(server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    return plan;
  }
  const planOf = async (server: RunningServer, key: string, planId: string) => {
    const res = await fetch(`${server.url}/v1/plans/${planId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as PlanView;
  };
  const gauge = async (server: RunningServer) => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return Number(/^countersign_executors_connected (\d+)$/m.exec(text)?.[1]);
  };
  const claim = (server: RunningServer, executor: string) =>
    fetch(`${server.url}/v1/executor/claim?wait=0`, { method: "POST", headers: { authorization: `Bearer ${EXECUTOR_TOKEN}`, [EXECUTOR_ID_HEADER]: executor } });
  const previewTs = async (database: Database, planId: string) =>
    waitFor(`the preview of ${planId}`, async () => (await database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${planId}`))[0]?.ts);
  /** Replies saying the plan waits for an executor: on their own, or one step of a reply that coalesced several. */
  const waitingReplies = (ts: string) => slack.thread(REVIEW, ts).filter((m) => JSON.stringify(m.blocks ?? []).includes("Waiting for an executor"));
  const outageMessages = () => slack.messagesIn(REVIEW).filter((m) => (m.text ?? "").includes("*No executor is connected*"));
  const drained = (database: Database) =>
    waitFor("the outbox to be delivered", async () => {
      const [row] = await database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL`);
      return row?.n === 0;
    });

  describe("on PGlite, one server", () => {
    let database: Database;
    let server: RunningServer;
    let agent: { id: string; name: string; key: string };

    beforeAll(async () => {
      database = await pglite.open();
      server = await replica(database);
      agent = await addAgent(server.ctx, { name: "missing-executor-agent" });
    });
    afterAll(async () => {
      await server?.close();
      await database?.close();
    });

    it("held no_executor via GET and on the page; the thread and the channel are told once; the gauge reads 0, then 1 when an executor polls; a second outage is told again", async () => {
      expect(await gauge(server)).toBe(0);
      const plan = await approved(server, agent);
      const held = (await planOf(server, agent.key, plan.id)).held;
      expect(held).toMatchObject({ by: "no_executor", lastSeenAt: null });
      expect(held?.reason).toContain("no executor is connected");

      const { url } = await createLoginLink(server.ctx, { userId: "U0ALICE", via: "cli" });
      const signIn = await fetch(url, { method: "POST", redirect: "manual", headers: { origin: server.ctx.config.publicUrl } });
      const cookie = `cs_session=${/cs_session=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")?.[1]}`;
      const page = await (await fetch(`${server.url}/plans/${plan.id}`, { headers: { cookie } })).text();
      expect(page).toContain('data-held="no_executor"');
      expect(page).toContain("Waiting for an executor:</strong> none is connected (none has asked for work yet), so nobody applies this plan until one does");

      const ts = await previewTs(database, plan.id);
      await waitFor("the thread to be told", () => waitingReplies(ts).length > 0);
      await waitFor("the review channel to be told", () => outageMessages().length > 0);
      // Further runs of the watch (this replica's own, and one called here) tell nothing more.
      expect(await announceMissingExecutors(server.ctx, { watchingSince: 0 })).toEqual({ outage: false, plans: 0 });
      await drained(database);
      expect(waitingReplies(ts)).toHaveLength(1);
      expect(JSON.stringify(waitingReplies(ts)[0]!.blocks)).toContain("⏸️ Waiting for an executor: no executor is connected (none has asked for work yet)");
      expect(outageMessages()).toHaveLength(1);
      expect(outageMessages()[0]!.text).toMatch(/^:warning: \*No executor is connected\*: none has asked for work yet \(`executor\.missingAfterSeconds`: 2\)/);

      // An executor arrives: it takes the plan, and counts as connected.
      const claimed = await claim(server, "executor-one");
      expect(claimed.status).toBe(200);
      expect(await gauge(server)).toBe(1);
      expect((await planOf(server, agent.key, plan.id)).held).toBeUndefined();

      // It goes away: after missingAfterSeconds none is connected, and a plan approved now waits for one.
      await waitFor("the executor to be missing", async () => (await gauge(server)) === 0);
      const next = await approved(server, agent);
      const again = (await planOf(server, agent.key, next.id)).held;
      expect(again).toMatchObject({ by: "no_executor" });
      expect(again?.by === "no_executor" && again.lastSeenAt).toBeTruthy();
      const nextTs = await previewTs(database, next.id);
      await waitFor("the second outage to be told", () => outageMessages().length === 2);
      await waitFor("the new plan's thread to be told", () => waitingReplies(nextTs).length > 0);
      await drained(database);
      expect(outageMessages()).toHaveLength(2);
      expect(outageMessages()[1]!.text).toMatch(/none has asked for work since <!date\^\d+\^/);
      expect(waitingReplies(ts)).toHaveLength(1);
      expect(waitingReplies(nextTs)).toHaveLength(1);
    });
  });

  const testDatabaseUrl = process.env.TEST_DATABASE_URL;
  describe.skipIf(!testDatabaseUrl)("on PostgreSQL, two replicas", () => {
    let first: Database & { url: string };
    let second: Database;
    let a: RunningServer;
    let b: RunningServer;
    let agent: { id: string; name: string; key: string };

    beforeAll(async () => {
      first = await openThrowawayPostgres(testDatabaseUrl!, { template: inject("postgresTemplate"), prefix: "cs_presence" });
      await first.migrate();
      second = await openDatabase({ kind: "postgres", url: first.url });
      a = await replica(first);
      b = await replica(second);
      agent = await addAgent(a.ctx, { name: "two-replica-agent" });
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await second?.close();
      await first?.close();
    });

    it("agree whether an executor is connected, and tell the thread and the channel once between them", async () => {
      const before = outageMessages().length;
      expect([await gauge(a), await gauge(b)]).toEqual([0, 0]);
      // An executor asks replica A for work (there is none): replica B counts it too.
      expect((await claim(a, "executor-on-a")).status).toBe(204);
      expect([await gauge(a), await gauge(b)]).toEqual([1, 1]);
      const plan = await approved(b, agent);
      // It goes away; both replicas say the plan waits, since the same moment.
      const onB = await waitFor("replica B to say the plan waits", async () => (await planOf(b, agent.key, plan.id)).held);
      const onA = (await planOf(a, agent.key, plan.id)).held;
      expect(onB).toMatchObject({ by: "no_executor" });
      expect(onA).toEqual(onB);
      expect([await gauge(a), await gauge(b)]).toEqual([0, 0]);

      const ts = await previewTs(first, plan.id);
      await waitFor("the thread to be told", () => waitingReplies(ts).length > 0);
      await waitFor("the review channel to be told", () => outageMessages().length > before);
      // Both replicas' watches run every 100 ms; more runs at once on both tell nothing more.
      const runs = await Promise.all([a, b, a, b].map((s) => announceMissingExecutors(s.ctx, { watchingSince: 0 })));
      expect(runs).toEqual(runs.map(() => ({ outage: false, plans: 0 })));
      await drained(first);
      expect(waitingReplies(ts)).toHaveLength(1);
      expect(outageMessages()).toHaveLength(before + 1);
    });
  });
});
