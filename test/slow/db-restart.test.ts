import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { PAUSE_CHANNEL } from "../../src/service/operations/pause.ts";
import { PLAN_CHANNEL } from "../../src/service/records/plan-signals.ts";
import { openDatabase, sql } from "../../src/store/db.ts";
import { startCli } from "../support/cli.ts";
import { crmTargetYaml } from "../support/crm-target-yaml.ts";
import { READ_TOKEN, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { privatePostgresAvailable, startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

/**
 * A database restart is not an outage: a real `countersign serve` and a real
 * `countersign executor` on a PostgreSQL cluster of the test's own, which the test restarts
 * (`pg_ctl restart -m fast`) under a submit/approve/apply loop. Approvals are signed Slack
 * clicks, so a click that lands during a restart is the durable-decision path at work.
 */
const available = privatePostgresAvailable();
if (!available) {
  const message = "initdb/pg_ctl not found (/usr/lib/postgresql/15/bin): the database-restart test is SKIPPED";
  if (process.env.CI === "true") throw new Error(`CI=true but ${message}`);
  console.warn(`\n!!! ${message}\n`);
}

const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";
const SIGNING_SECRET = "restart-signing-secret";
const REVIEW = "C0REVIEW";
/** Short, so the "not recorded" case fits in the test; long enough for a restart (about a second) to be waited out. */
const DECISION_RETRY_SECONDS = 8;
const RESTARTS = 6;
/** Plans the loop passes between two restarts. */
const BETWEEN = 6;
/** Enough for every restart to find the loop under way, and for work after the last one. */
const PLANS = (RESTARTS + 1) * BETWEEN;
const LANES = 3;
const FINAL = ["applied", "failed", "stale", "expired", "rejected"];

describe.skipIf(!available)("a PostgreSQL restart is not an outage", () => {
  let pg: PrivatePostgres;
  let dir: string;
  let target: JsonResourceServer;
  let slack: SlackEmulator;
  let clicks: SlackRequests;
  let serverUrl: string;
  let agentKey: string;
  const children: Awaited<ReturnType<typeof startCli>>[] = [];
  const exits: string[] = [];

  const api = (method: string, p: string, body?: unknown) =>
    fetch(`${serverUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${agentKey}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  /** An agent that retries its submission (same idempotency key) while the server answers 503. */
  const submit = async (i: number): Promise<{ id: string; hash: string }> => {
    const request = {
      title: `restart ${i}`,
      idempotencyKey: `restart-${i}`,
      actions: [{ kind: "http.json", target: "crm", path: `/contacts/${i}`, op: "merge", body: { email: `c${i}@new.example` } }],
    };
    return waitFor(
      `plan ${i} to be accepted`,
      async () => {
        if (exits.length > 0) throw new Error(exits.join("\n"));
        const response = await api("POST", "/v1/plans", request).catch(() => undefined);
        if (!response) return undefined;
        if (response.status === 503) return undefined;
        expect([200, 201]).toContain(response.status);
        return (await response.json()) as { id: string; hash: string };
      },
      60_000,
    );
  };
  const status = async (id: string): Promise<string | undefined> => {
    const response = await api("GET", `/v1/plans/${id}`).catch(() => undefined);
    if (!response || response.status === 503) return undefined;
    expect(response.status).toBe(200);
    return ((await response.json()) as { status: string }).status;
  };
  const approveInSlack = async (plan: { id: string; hash: string }) => {
    const response = await clicks.blockAction({
      user: "U0ALICE",
      actionId: "approve",
      value: JSON.stringify({ planId: plan.id, hash: plan.hash }),
      channelId: REVIEW,
      messageTs: "1700000000.000100",
    });
    expect(response.status).toBe(200); // Bolt acknowledged: from here on, the click must not be lost silently
  };

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-restart-"));
    target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: PLANS + 2 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await target.start();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
    writeFileSync(
      path.join(dir, "countersign.yml"),
      [
        "environment: test",
        `slack: { reviewChannel: ${REVIEW}, decisionRetrySeconds: ${DECISION_RETRY_SECONDS} }`,
        "defaults: { approvers: [U0ALICE, U0BOB] }",
        "executor: { leaseSeconds: 6 }",
        ...crmTargetYaml(target.url, { write: true, allowMerges: true }),
      ].join("\n"),
    );
    const keys = await testGrantKeys();
    const common = {
      COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
      COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN,
      CRM_READ: READ_TOKEN,
      LOG_LEVEL: "info",
    };
    const server = await startCli(["serve"], {
      cwd: dir,
      env: {
        ...common,
        DATABASE_URL: pg.url,
        PORT: "0",
        COUNTERSIGN_GRANT_PRIVATE_KEY: keys.privatePem,
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_API_URL: slack.url,
      },
      ready: /"url":"http:\/\/[^"]+".*countersign serving/,
      timeoutMs: 60_000,
    });
    children.push(server);
    serverUrl = /"url":"(http:\/\/[^"]+)"/.exec(server.output())![1]!;
    server.child.on("exit", (code, signal) => exits.push(`serve exited (${code ?? signal}):\n${server.output().slice(-3000)}`));
    const executor = await startCli(["executor"], {
      cwd: dir,
      env: { ...common, COUNTERSIGN_URL: serverUrl, COUNTERSIGN_GRANT_PUBLIC_KEY: keys.publicPem, CRM_WRITE: WRITE_TOKEN },
      ready: /executor running/,
      timeoutMs: 60_000,
    });
    children.push(executor);
    executor.child.on("exit", (code, signal) => exits.push(`executor exited (${code ?? signal}):\n${executor.output().slice(-3000)}`));
    const direct = await openDatabase({ kind: "postgres", url: pg.url });
    agentKey = (await addAgent({ database: direct, clock: () => new Date() }, { name: "restart-agent" })).key;
    await direct.close();
    clicks = new SlackRequests({ baseUrl: serverUrl, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(children.map((c) => c.stop()));
    await slack?.stop();
    await target?.stop();
    await pg?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`${RESTARTS} restarts under a submit/approve/apply loop: no exit, nothing lost, nothing applied twice`, async () => {
    const plans: { id: string; hash: string }[] = [];
    // Several agents at once, so every restart finds queries in flight on several connections.
    const lane = async (first: number) => {
      for (let i = first; i < PLANS; i += LANES) {
        const plan = await submit(i);
        plans[i] = plan;
        await approveInSlack(plan);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const loop = Promise.all(Array.from({ length: LANES }, (_, k) => lane(k)));
    const restarts = (async () => {
      for (let r = 0; r < RESTARTS; r++) {
        // Wait for the loop to make progress between restarts, so every restart hits work in flight.
        await waitFor(`the loop to pass plan ${(r + 1) * BETWEEN}`, () => plans.filter(Boolean).length >= (r + 1) * BETWEEN, 90_000);
        await pg.restart();
      }
    })();
    await Promise.all([loop, restarts]);

    const finals = await waitFor(
      "every plan to reach a final state",
      async () => {
        const all = await Promise.all(plans.map((p) => status(p.id)));
        return all.every((s) => s !== undefined && FINAL.includes(s)) && all;
      },
      90_000,
    );
    expect(exits).toEqual([]);
    expect(finals).toEqual(plans.map(() => "applied"));
    for (let i = 0; i < PLANS; i++) expect(target.writes().filter((w) => w.path === `/contacts/${i}`)).toHaveLength(1);
    // LISTEN came back by itself: the server's listening connection is on the restarted cluster.
    const direct = await openDatabase({ kind: "postgres", url: pg.url });
    try {
      await waitFor(
        "the server to LISTEN again",
        async () => {
          // The server LISTENs on the plan and pause channels over one connection, which re-issues
          // both after a reconnect; pg_stat_activity shows only its last statement, either of them.
          const rows = await direct.rows<{ n: number }>(
            sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query ILIKE ${`listen%${PLAN_CHANNEL}%`} OR query ILIKE ${`listen%${PAUSE_CHANNEL}%`}`,
          );
          return rows[0]!.n >= 1;
        },
        20_000,
      );
    } finally {
      await direct.close();
    }
    // The loops said a line per outage, not one per tick (a 250 ms tick over a 1-2 s outage would
    // say 4-8). A restart may show as two outages a moment apart: the pool notices its closed
    // connections one by one, so a query may succeed on a reconnected one and the next fail on
    // one not yet noticed (1 run in 6 at load 7-12 said 5 for 4 restarts).
    const paused = children[0]!
      .output()
      .split("\n")
      .filter((l) => l.includes("outbox delivery paused"));
    expect(paused.length).toBeGreaterThanOrEqual(1);
    expect(paused.length).toBeLessThanOrEqual(2 * RESTARTS);
  }, 400_000);

  it("a click acknowledged while the database is down is recorded within 10 s of its return", async () => {
    const plan = await submit(PLANS);
    await pg.stop();
    try {
      await approveInSlack(plan);
      // Meanwhile the executor API and the agent API say what is wrong, with a code to retry on.
      const claim = await fetch(`${serverUrl}/v1/executor/claim?wait=0`, { method: "POST", headers: { authorization: `Bearer ${EXECUTOR_TOKEN}` } });
      expect(claim.status).toBe(503);
      expect(((await claim.json()) as { error: { code: string } }).error.code).toBe("database_unavailable");
      expect((await api("GET", `/v1/plans/${plan.id}`)).status).toBe(503);
      await new Promise((r) => setTimeout(r, 1000)); // the click is now waiting on an unreachable database
    } finally {
      await pg.start();
    }
    const back = Date.now();
    await waitFor(
      "the held approval to land",
      async () => {
        const s = await status(plan.id);
        return s !== undefined && s !== "pending";
      },
      10_000,
    );
    expect(Date.now() - back).toBeLessThan(10_000);
    expect(
      await waitFor(
        "the plan to be applied",
        async () => {
          const s = await status(plan.id);
          return s !== undefined && FINAL.includes(s) && s;
        },
        30_000,
      ),
    ).toBe("applied");
    expect(exits).toEqual([]);
  }, 90_000);

  it("a click that cannot be recorded within the window tells the clicker so", async () => {
    const plan = await submit(PLANS + 1);
    const before = slack.callsTo("chat.postEphemeral").length;
    await pg.stop();
    try {
      await approveInSlack(plan);
      const told = await waitFor(
        "the clicker to be told",
        () =>
          slack
            .callsTo("chat.postEphemeral")
            .slice(before)
            .find((c) => String(c.body.text).includes(plan.id)),
        (DECISION_RETRY_SECONDS + 15) * 1000,
      );
      expect(told.body.user).toBe("U0ALICE");
      expect(String(told.body.text)).toMatch(/approval of .*was not recorded because Countersign's database was unavailable; click again/);
    } finally {
      await pg.start();
    }
    // Nothing was recorded behind the person's back: the plan still waits for a decision.
    expect(await waitFor("the plan to be readable", () => status(plan.id), 20_000)).toBe("pending");
    expect(exits).toEqual([]);
  }, 90_000);
});
