import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PostgresRowTargetConfig } from "../../src/config/schema.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import type { Database } from "../../src/store/db.ts";
import { openRowDatabase, type RowDatabase } from "../support/adapters-postgres.ts";
import { startCli } from "../support/cli.ts";
import { postgresKind } from "../support/databases.ts";
import { silentLogger, testConfig, testGrantKeys } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
const EXECUTOR_TOKEN = "executor-token-postgres-row-0123456789";
const SIGNING_SECRET = "slack-signing-secret-postgres-row";
const REVIEW = "C0REVIEW";
const LEASE_SECONDS = 5;

type Executor = Awaited<ReturnType<typeof startCli>>;

/**
 * The whole way for a `postgres.row` target: an agent submits a row update over the
 * agent API, a person approves it in Slack (the emulator, signed clicks), and `countersign
 * executor`, its own process holding the only write role, applies it through the adapter
 * registry. Real roles on a database of the file's own: the server previews and watches with
 * a SELECT-only role; every row written is counted by a trigger (test/support/adapters-postgres.ts).
 */
describe.skipIf(!postgresKind || !adminUrl)("postgres.row end to end: agent, Slack approval, executor process", () => {
  let rows: RowDatabase;
  let database: Database;
  let slack: SlackEmulator;
  let server: RunningServer;
  let dir: string;
  let key = "";
  const executors: Executor[] = [];

  beforeAll(async () => {
    rows = await openRowDatabase(adminUrl!);
    database = await postgresKind!.open();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
    const target = (watchSeconds: number) =>
      PostgresRowTargetConfig.parse({
        adapter: "postgres.row",
        read: { url: rows.readUrl },
        tables: { contacts: { key: ["id"], version: "updated_at" } },
        allow: { ops: ["update", "insert"], tables: ["contacts"] },
        watch: { intervalSeconds: watchSeconds },
        timeoutMs: 10_000,
      });
    const config = {
      ...testConfig({}),
      // crmdb is re-read only at an Approve click and by the executor; `watched` is the same table, watched every second.
      targets: { crmdb: target(0), watched: target(1) },
      executorToken: EXECUTOR_TOKEN,
      executor: { leaseSeconds: LEASE_SECONDS },
      slack: { enabled: true as const, botToken: slack.botToken, signingSecret: SIGNING_SECRET, appToken: undefined, apiUrl: slack.url, reviewChannel: REVIEW },
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
    key = (await addAgent(server.ctx, { name: "crm-agent" })).key;
    // The executor's own config file, as a user writes it: the write role only here.
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-postgres-row-"));
    writeFileSync(
      path.join(dir, "countersign.yml"),
      [
        "environment: test",
        "defaults: { approvers: [U0ALICE, U0BOB] }",
        "targets:",
        "  crmdb:",
        "    adapter: postgres.row",
        '    read: { url: "${CRMDB_READ_URL}" }',
        '    write: { url: "${CRMDB_WRITE_URL}" }',
        "    tables: { contacts: { key: [id], version: updated_at } }",
        "    allow: { ops: [update, insert], tables: [contacts] }",
        "    timeoutMs: 10000",
      ].join("\n"),
    );
  }, 120_000);

  afterEach(async () => {
    await Promise.all(executors.splice(0).map((e) => e.stop()));
  });

  afterAll(async () => {
    await server?.close();
    await slack?.stop();
    await database?.close();
    await rows?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const startExecutor = async (): Promise<Executor> => {
    const executor = await startCli(["executor"], {
      cwd: dir,
      env: {
        COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
        COUNTERSIGN_URL: server.url,
        COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN,
        COUNTERSIGN_GRANT_PUBLIC_KEY: (await testGrantKeys()).publicPem,
        CRMDB_READ_URL: rows.readUrl,
        CRMDB_WRITE_URL: rows.writeUrl,
        LOG_LEVEL: "info",
      },
      ready: /executor running/,
      timeoutMs: 120_000,
    });
    executors.push(executor);
    return executor;
  };

  const api = async (route: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}/v1${route}`, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
    return { status: res.status, body: (await res.json()) as PlanView & { error?: { code: string; message: string } } };
  };
  const propose = async (id: number, values: Record<string, unknown>, target = "crmdb") => {
    const { status, body } = await api("/plans", {
      method: "POST",
      body: JSON.stringify({
        title: `Update contact ${id}`,
        actions: [{ kind: "postgres.row", target, table: "contacts", key: { id }, op: "update", values }],
      }),
    });
    expect(status, JSON.stringify(body)).toBe(201);
    return body;
  };
  const view = async (plan: PlanView) => (await api(`/plans/${plan.id}`)).body;
  const settled = (plan: PlanView, statuses: string[], timeoutMs = 60_000) =>
    waitFor(
      `plan ${plan.id} to be ${statuses.join(" or ")}`,
      async () => {
        const v = await view(plan);
        return statuses.includes(v.status) ? v : undefined;
      },
      timeoutMs,
    );
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
  const door = () => httpInteractions(new SlackRequests({ baseUrl: server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" }));
  /** Alice clicks Approve on the plan's Slack message. */
  const approveInSlack = async (plan: PlanView) => {
    const message = await messageOf(plan);
    expect(
      (await door().blockAction({ user: "U0ALICE", actionId: "approve", value: approveValue(message()), channelId: REVIEW, messageTs: message().ts })).acked,
    ).toBe(true);
    return message;
  };
  /** A contact row, a plan to change its email, approved in Slack. */
  const approvedChange = async (id: number, name: string) => {
    const email = name.toLowerCase();
    await rows.admin`INSERT INTO contacts (id, name, email) VALUES (${id}, ${name}, ${`${email}@old.example`})`;
    const plan = await propose(id, { email: `${email}@new.example` });
    await approveInSlack(plan);
    await settled(plan, ["approved"]);
    return plan;
  };
  const row = async (id: number) =>
    (
      await rows.admin<
        { name: string; email: string | null; version: string }[]
      >`SELECT name, email, updated_at::text AS version FROM contacts WHERE id = ${id}`
    )[0]!;

  it("an approved row update is applied by the executor process exactly once, and the Slack thread says so", async () => {
    await rows.admin`INSERT INTO contacts (id, name, email) VALUES (1, 'Ada', 'ada@old.example')`;
    const before = await row(1);
    const plan = await propose(1, { email: "ada@new.example" });
    expect(plan.preview.actions[0]).toMatchObject({
      target: "crmdb",
      path: "/contacts/1",
      op: "update",
      precondition: "version",
      version: before.version,
      before: { id: 1, name: "Ada", email: "ada@old.example" },
      after: { id: 1, name: "Ada", email: "ada@new.example" },
      changes: [{ path: "/email", from: "ada@old.example", to: "ada@new.example" }],
    });
    const writes = await rows.writes();
    const message = await approveInSlack(plan);
    await settled(plan, ["approved"]);
    expect(await rows.writes()).toBe(writes); // the server only read

    await startExecutor();
    const done = await settled(plan, ["applied", "failed", "stale"]);
    expect(done.status).toBe("applied");
    expect(done.outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crmdb", path: "/contacts/1", status: "applied", verified: true }] });
    expect(await rows.writes()).toBe(writes + 1);
    const after = await row(1);
    expect(after).toMatchObject({ name: "Ada", email: "ada@new.example" });
    expect(after.version > before.version).toBe(true); // Countersign moved the version column
    const reply = await waitFor(
      "the applied reply in the thread",
      () => slack.thread(REVIEW, message().ts).find((r) => JSON.stringify(r.blocks ?? []).includes("Applied ✅ — 1 action written")),
      60_000,
    );
    expect(reply.text).toMatch(/applied/i);
  }, 180_000);

  it("a concurrent writer between approval and apply: stale with the versions and what changed, zero writes by the executor", async () => {
    const plan = await approvedChange(2, "Bea");
    // Someone else's write lands after the approval (and its re-check), before any executor runs.
    await rows.admin`UPDATE contacts SET name = 'Bea B.', updated_at = clock_timestamp() WHERE id = 2`;
    const edited = await row(2);
    const writes = await rows.writes();

    await startExecutor();
    const done = await settled(plan, ["applied", "failed", "stale"]);
    expect(done.status).toBe("stale");
    expect(done.outcome?.actions).toStrictEqual([
      {
        index: 0,
        target: "crmdb",
        path: "/contacts/2",
        status: "stale",
        detail: "crmdb /contacts/2 changed since the preview",
        expected: plan.preview.actions[0]!.version,
        now: edited.version,
        changedSincePreview: [{ path: "/name", from: "Bea", to: "Bea B." }],
      },
    ]);
    expect(await rows.writes()).toBe(writes);
    expect(await row(2)).toMatchObject({ name: "Bea B.", email: "bea@old.example" });
  }, 180_000);

  it("the executor killed with SIGKILL while its UPDATE waits at the row: after the lease, one write in all", async () => {
    const plan = await approvedChange(3, "Caio");
    const writes = await rows.writes();
    // Hold the row: the executor's conditional UPDATE queues behind this lock.
    const held = await rows.admin.reserve();
    try {
      await held`BEGIN`;
      await held`SELECT 1 FROM contacts WHERE id = 3 FOR UPDATE`;
      const first = await startExecutor();
      await waitFor(
        "the executor's UPDATE to wait for the row",
        async () =>
          (
            await rows.admin<
              { n: number }[]
            >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE%'`
          )[0]!.n > 0 || undefined,
        60_000,
      );
      first.child.kill("SIGKILL");
      await first.stop();
      expect((await view(plan)).status).toBe("executing");
    } finally {
      await held`COMMIT`;
      held.release();
    }

    await startExecutor();
    const done = await settled(plan, ["applied", "failed", "stale"], 90_000);
    expect(done.status).toBe("applied");
    // The dead executor's UPDATE, sent outside BEGIN, committed once the lock was free: the
    // takeover finds the row holding the change and writes nothing.
    expect(done.outcome).toStrictEqual({
      status: "applied",
      reconciled: true,
      actions: [{ index: 0, target: "crmdb", path: "/contacts/3", status: "applied", reconciled: true, verified: true }],
    });
    expect(await rows.writes()).toBe(writes + 1);
    expect(await row(3)).toMatchObject({ email: "caio@new.example" });
    const events = await database.rows<{ type: string }>(sql`SELECT type FROM audit_events WHERE plan_id = ${plan.id} ORDER BY id`);
    expect(events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing", "plan.reclaimed", "plan.applied"]);
  }, 240_000);

  it("a row changed behind a pending plan: the watcher, reading with the SELECT-only role, makes it stale", async () => {
    await rows.admin`INSERT INTO contacts (id, name, email) VALUES (4, 'Dora', 'dora@old.example')`;
    const plan = await propose(4, { email: "dora@new.example" }, "watched");
    const writes = await rows.writes();
    await rows.admin`UPDATE contacts SET email = 'dora@elsewhere.example', updated_at = clock_timestamp() WHERE id = 4`;
    const done = await settled(plan, ["stale"], 30_000);
    expect(done.outcome?.actions[0]).toMatchObject({
      status: "stale",
      changedSincePreview: [{ path: "/email", from: "dora@old.example", to: "dora@elsewhere.example" }],
    });
    expect(await rows.writes()).toBe(writes + 1); // the edit itself, nothing by Countersign
  }, 90_000);

  it("an Approve click after the row changed is refused with what changed, and the plan is stale", async () => {
    await rows.admin`INSERT INTO contacts (id, name, email) VALUES (5, 'Eva', 'eva@old.example')`;
    const plan = await propose(5, { email: "eva@new.example" });
    const message = await messageOf(plan);
    await rows.admin`UPDATE contacts SET email = 'eva@elsewhere.example', updated_at = clock_timestamp() WHERE id = 5`;
    await door().blockAction({ user: "U0ALICE", actionId: "approve", value: approveValue(message()), channelId: REVIEW, messageTs: message().ts });
    const told = await waitFor("the clicker to be told", () =>
      slack.ephemerals.find((e) => e.user === "U0ALICE" && /changed since you were shown/.test(e.text ?? "") && (e.text ?? "").includes("/contacts/5")),
    );
    expect(told.text).toContain("eva@elsewhere.example");
    expect(await view(plan)).toMatchObject({ status: "stale", approvals: [] });
  }, 90_000);
});
