import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { sql, type Database } from "../../src/store/db.ts";
import { startCli } from "../support/cli.ts";
import { crmTargetYaml } from "../support/crm-target-yaml.ts";
import { openThrowawayPostgres } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { RoundRobinProxy } from "../support/round-robin-proxy.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

/**
 * "Restarts lose nothing": two `countersign serve` replicas on one PostgreSQL database behind a
 * round-robin proxy that retries a request the replica never took on the other, as a load
 * balancer does. Agents submit and long-poll, a reviewer approves with signed Slack clicks and an
 * executor applies, all through the proxy, while each replica in turn is stopped with SIGTERM and
 * started again, and then the executor is stopped mid-apply and another started. Nothing is lost
 * (every plan submitted is applied, every acknowledged click recorded), nothing is applied twice,
 * and no agent sees a 5xx.
 */
const databaseUrl = process.env.TEST_DATABASE_URL;
if (!databaseUrl) {
  const message = "TEST_DATABASE_URL is not set: the rolling-restart test is SKIPPED";
  if (process.env.CI === "true") throw new Error(`CI=true but ${message}`);
  console.warn(`\n!!! ${message}\n`);
}

const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";
const SIGNING_SECRET = "rolling-signing-secret";
const REVIEW = "C0REVIEW";
const SHUTDOWN_SECONDS = 5;
/** Resources the agents' plans change, one plan each; more than the loop gets through. */
const CONTACTS = 2000;
const LANES = 4;
/** Plans finished between one stop and the next, so each stop meets work in flight. */
const BETWEEN_STOPS = 4;
const FINAL = ["applied", "failed", "stale", "expired", "rejected", "cancelled"];
/** Each replica in turn, the executor mid-apply, then each replica again. */
const STOPS = [0, 1, "executor", 0, 1] as const;

type Spawned = Awaited<ReturnType<typeof startCli>>;

describe.skipIf(!databaseUrl)("rolling restarts of two replicas and the executor lose nothing", () => {
  let database: Database & { url: string };
  let dir: string;
  let target: JsonResourceServer;
  let slack: SlackEmulator;
  let proxy: RoundRobinProxy;
  let proxyUrl: string;
  let clicks: SlackRequests;
  let agentKey: string;
  let common: Record<string, string>;
  let keys: Awaited<ReturnType<typeof testGrantKeys>>;
  const ports: number[] = [];
  const replicas: Spawned[] = [];
  const executors: Spawned[] = [];
  /** Processes that exited without the test stopping them. */
  const unexpected: string[] = [];
  const stopping = new Set<ChildProcess>();

  const watch = (name: string, spawned: Spawned) => {
    spawned.child.on("exit", (code, signal) => {
      if (!stopping.has(spawned.child)) unexpected.push(`${name} exited (${code ?? signal}):\n${spawned.output().slice(-3000)}`);
    });
    return spawned;
  };
  const startReplica = async (i: number) =>
    watch(
      `replica ${i}`,
      await startCli(["serve"], {
        cwd: dir,
        env: {
          ...common,
          DATABASE_URL: database.url,
          PORT: String(ports[i]),
          HOST: "127.0.0.1",
          PUBLIC_URL: proxyUrl,
          COUNTERSIGN_GRANT_PRIVATE_KEY: keys.privatePem,
          SLACK_BOT_TOKEN: slack.botToken,
          SLACK_SIGNING_SECRET: SIGNING_SECRET,
          SLACK_API_URL: slack.url,
        },
        ready: /countersign serving/,
        timeoutMs: 120_000,
      }),
    );
  const startExecutor = async () =>
    watch(
      "executor",
      await startCli(["executor"], {
        cwd: dir,
        env: { ...common, COUNTERSIGN_URL: proxyUrl, COUNTERSIGN_GRANT_PUBLIC_KEY: keys.publicPem, CRM_WRITE: WRITE_TOKEN },
        ready: /executor running/,
        timeoutMs: 120_000,
      }),
    );
  /** SIGTERM, as a supervisor stops a process; resolves with its exit code and how long it took. */
  const terminate = async (spawned: Spawned): Promise<{ code: number | null; ms: number; output: string }> => {
    stopping.add(spawned.child);
    const exited = new Promise<number | null>((resolve) => spawned.child.once("close", (code) => resolve(code)));
    const started = performance.now();
    spawned.child.kill("SIGTERM");
    const code = await exited;
    return { code, ms: performance.now() - started, output: spawned.output() };
  };

  beforeAll(async () => {
    database = await openThrowawayPostgres(databaseUrl!, { template: inject("postgresTemplate"), prefix: "cs_rolling" });
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-rolling-"));
    target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: CONTACTS }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
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
        `shutdownSeconds: ${SHUTDOWN_SECONDS}`,
        `slack: { reviewChannel: ${REVIEW} }`,
        "defaults: { approvers: [U0ALICE] }",
        // A hand-off whose executor was told 204 by a stopping replica waits out its lease.
        "executor: { leaseSeconds: 6 }",
        "limits: { plansPerMinute: 1000, maxPending: 1000 }",
        ...crmTargetYaml(target.url, { write: true, allowMerges: true }),
      ].join("\n"),
    );
    keys = await testGrantKeys();
    common = { COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"), COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN, CRM_READ: READ_TOKEN, LOG_LEVEL: "info" };
    ports.push(await freePort(), await freePort());
    proxy = new RoundRobinProxy(ports.map((port) => `http://127.0.0.1:${port}`));
    proxyUrl = await proxy.start();
    replicas.push(...(await Promise.all([startReplica(0), startReplica(1)])));
    executors.push(await startExecutor());
    agentKey = (await addAgent({ database, clock: () => new Date() }, { name: "rolling-agent" })).key;
    clicks = new SlackRequests({ baseUrl: proxyUrl, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
  }, 180_000);

  afterAll(async () => {
    for (const spawned of [...replicas, ...executors]) stopping.add(spawned.child);
    await Promise.all([...replicas, ...executors].filter((s) => s.child.exitCode === null && s.child.signalCode === null).map((s) => s.stop()));
    await proxy?.stop();
    await slack?.stop();
    await target?.stop();
    await database?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("restarting each replica in turn, then the executor mid-apply: no plan or click lost, none applied twice, no 5xx to agents", async () => {
    /** What agents were answered, by request: none may be a 5xx. */
    const answered: { what: string; status: number }[] = [];
    const plans: { id: string; hash: string }[] = [];
    const clicked = new Set<string>();
    const finished = new Set<string>();
    let nextPlan = 0;
    let stopsDone = false;
    const agent = async (method: string, p: string, body?: unknown) => {
      const response = await fetch(`${proxyUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${agentKey}`, ...(body ? { "content-type": "application/json" } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      answered.push({ what: `${method} ${p}`, status: response.status });
      return response;
    };
    // Agents keep submitting until the last stop is done, so every stop meets plans in flight.
    const lane = async () => {
      while (!stopsDone && unexpected.length === 0) {
        const i = nextPlan++;
        const request = {
          title: `rolling ${i}`,
          idempotencyKey: `rolling-${i}`,
          actions: [{ kind: "http.json", target: "crm", path: `/contacts/${i}`, op: "merge", body: { email: `c${i}@new.example` } }],
        };
        const submitted = await agent("POST", "/v1/plans", request);
        expect(submitted.status, await submitted.clone().text()).toBe(201);
        const plan = (await submitted.json()) as { id: string; hash: string };
        plans[i] = plan;
        const click = await clicks.blockAction({
          user: "U0ALICE",
          actionId: "approve",
          value: JSON.stringify({ planId: plan.id, hash: plan.hash }),
          channelId: REVIEW,
          messageTs: "1700000000.000100",
        });
        expect(click.status, await click.text()).toBe(200);
        clicked.add(plan.id);
        // The agent waits as agents do: long-polls, asking again whenever one is answered early.
        for (;;) {
          const waited = await agent("GET", `/v1/plans/${plan.id}/wait?timeout=20`);
          expect(waited.status).toBe(200);
          if (FINAL.includes(((await waited.json()) as { status: string }).status)) break;
        }
        finished.add(plan.id);
      }
    };

    const stops: { what: string; code: number | null; ms: number; output: string }[] = [];
    const steps = async () => {
      for (const stop of STOPS) {
        const after = finished.size + BETWEEN_STOPS;
        await waitFor(`${after} plans to finish`, () => finished.size >= after || unexpected.length > 0, 120_000);
        if (unexpected.length > 0) return;
        if (stop === "executor") {
          // Held at its write, so the signal comes mid-apply; it finishes the plan in hand, then exits.
          let held!: () => void;
          const heldNow = new Promise<void>((resolve) => (held = resolve));
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          let holding = true;
          target.beforeHandle = async (request) => {
            if (request.method === "GET" || !holding) return;
            holding = false;
            held();
            await released;
          };
          await heldNow;
          const stopped = terminate(executors.at(-1)!);
          executors.push(await startExecutor());
          release();
          stops.push({ what: "executor", ...(await stopped) });
          target.beforeHandle = undefined;
        } else {
          stops.push({ what: `replica ${stop}`, ...(await terminate(replicas[stop]!)) });
          replicas[stop] = await startReplica(stop);
        }
      }
    };

    await Promise.all([...Array.from({ length: LANES }, () => lane()), steps().finally(() => (stopsDone = true))]);
    expect(unexpected).toEqual([]);
    expect(stops.map((s) => s.what)).toEqual(["replica 0", "replica 1", "executor", "replica 0", "replica 1"]);
    for (const stop of stops) {
      expect(stop.code, `${stop.what}:\n${stop.output.slice(-3000)}`).toBe(0);
      // The bound fires at shutdownSeconds; what is left is the process exiting and this one noticing.
      if (stop.what === "executor") continue;
      expect(stop.ms, stop.what).toBeLessThan(SHUTDOWN_SECONDS * 1000 + 1000);
      // It drained: long-polls answered, then every request it had finished; none was cut off.
      expect(stop.output).toContain("stopping: not ready");
      expect(stop.output).not.toContain("were cut off");
    }

    // No lost plans: every plan an agent was told was stored reached a final status, and it is applied.
    expect(plans.filter(Boolean)).toHaveLength(nextPlan);
    const statuses = await database.rows<{ id: string; status: string }>(sql`SELECT id, status FROM plans`);
    expect(Object.fromEntries(statuses.map((p) => [p.id, p.status]))).toEqual(Object.fromEntries(plans.map((p) => [p.id, "applied"])));
    // No lost clicks: every approval Slack was told 200 for is recorded.
    const approvals = await database.rows<{ plan_id: string }>(sql`SELECT plan_id FROM decisions WHERE user_id = 'U0ALICE' AND verdict = 'approve'`);
    expect(new Set(approvals.map((d) => d.plan_id))).toEqual(clicked);
    // Nothing applied twice.
    for (let i = 0; i < nextPlan; i++) expect(target.writes().filter((w) => w.path === `/contacts/${i}`)).toHaveLength(1);
    // No 5xx reached an agent (the proxy retried only what a stopping replica never took).
    expect(answered.filter((a) => a.status >= 500)).toEqual([]);
    // The stops met traffic: requests a stopped replica could not take went to the other.
    expect(proxy.retries.length).toBeGreaterThan(0);
  }, 600_000);
});
