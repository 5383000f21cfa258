import { rmSync } from "node:fs";
import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RecordedRequest } from "../../src/demo/json-resource-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { getPlan } from "../../src/service/intake/get-plan.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { databaseKinds, postgresKind, type TestDatabaseKind } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { READ_TOKEN, targetConfig, testConfig, WRITE_TOKEN } from "../support/harness.ts";
import { waitFor } from "../support/wait-for.ts";
import { spawnExecutor, writeExecutorConfig, type SpawnedExecutor } from "../support/executor-config-file.ts";

const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";
const LEASE_SECONDS = 5;

/**
 * The executor as its own process (`countersign executor`), against the real server and a
 * target that records every request: only the executor writes, and it writes exactly once.
 */
function executorSuite(kind: TestDatabaseKind, seed: Record<string, unknown>) {
  let dir: string;
  const e = useServer(kind, {
    seed: seed as never,
    config: (targetUrl) => {
      ({ dir } = writeExecutorConfig(targetUrl, { approvers: ["U0ALICE", "U0BOB", "U0CAROL"], prefix: "countersign-executor-" }));
      return { ...testConfig({ crm: targetConfig(targetUrl) }), executorToken: EXECUTOR_TOKEN, executor: { leaseSeconds: LEASE_SECONDS } };
    },
  });
  let agent: AgentIdentity;
  const executors: SpawnedExecutor[] = [];

  const startExecutor = async () => {
    const executor = await spawnExecutor({ dir, serverUrl: e.server.url, executorToken: EXECUTOR_TOKEN });
    executors.push(executor);
    return executor;
  };

  const propose = async (p: string, body: Record<string, unknown>, title = `change ${p}`) =>
    (await submitPlan(e.server.ctx, { agent, request: { title, actions: [{ kind: "http.json", target: "crm", path: p, op: "merge", body }] } })).plan;
  const approve = (plan: PlanView, userId = "U0ALICE") =>
    decide(e.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "slack" }, verdict: "approve" });
  const view = (plan: PlanView) => getPlan(e.server.ctx, { agent, planId: plan.id });
  const settled = (plan: PlanView, timeoutMs = 60_000) =>
    waitFor(
      `plan ${plan.id} to finish`,
      async () => {
        const v = await view(plan);
        return ["applied", "failed", "stale", "expired"].includes(v.status) && v;
      },
      timeoutMs,
    );
  const writesTo = (p: string) => e.target.writes().filter((r) => r.path === p);

  beforeAll(async () => {
    agent = await addAgent(e.server.ctx, { name: "executor-e2e" });
    expect(e.server.ctx.config.targets.crm).not.toHaveProperty("write"); // the server holds no write credential
  });
  afterEach(async () => {
    e.target.beforeHandle = undefined;
    e.target.beforeAnswer = undefined;
    await Promise.all(executors.splice(0).map((e) => e.stop()));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
  });

  return {
    startExecutor,
    propose,
    approve,
    view,
    settled,
    writesTo,
    get target() {
      return e.target;
    },
    get database() {
      return e.database;
    },
    get server() {
      return e.server;
    },
  };
}

describe.each(databaseKinds)("executor process on $name", (kind) => {
  const s = executorSuite(kind, { "/contacts/1": { id: 1, email: "ana@old.example" }, "/contacts/2": { id: 2, email: "bruno@old.example" } });

  it("applies an approved plan once, with If-Match and the write credential; the server only ever read", async () => {
    const plan = await s.propose("/contacts/1", { email: "ana@new.example" });
    const previewRequests = s.target.requests.length;
    expect(s.target.requests.every((r) => r.method === "GET" && r.headers.authorization === `Bearer ${READ_TOKEN}`)).toBe(true);
    await s.approve(plan);
    await s.startExecutor();
    const done = await s.settled(plan);
    expect(done.status).toBe("applied");
    expect(done.outcome).toMatchObject({ status: "applied", actions: [{ index: 0, status: "applied" }] });
    expect(done.outcome?.reconciled).toBeUndefined();
    const writes = s.writesTo("/contacts/1");
    expect(writes).toHaveLength(1);
    const [write] = writes as [RecordedRequest];
    expect(write.method).toBe("PATCH");
    expect(write.headers["if-match"]).toBe(plan.preview.actions[0]!.version);
    expect(write.headers.authorization).toBe(`Bearer ${WRITE_TOKEN}`);
    expect(write.headers["content-type"]).toBe("application/merge-patch+json");
    expect(write.headers["idempotency-key"]).toBe(`${plan.id}:0`);
    expect(s.target.get("/contacts/1")).toEqual({ id: 1, email: "ana@new.example" });
    // Nothing but the executor's one write used the write credential.
    const withWriteToken = s.target.requests.slice(previewRequests).filter((r) => r.headers.authorization === `Bearer ${WRITE_TOKEN}`);
    expect(withWriteToken).toEqual([write]);
  });

  it("refuses as stale, writing nothing, when the target changed between preview and apply", async () => {
    const plan = await s.propose("/contacts/2", { email: "bruno@new.example" });
    await s.approve(plan);
    s.target.set("/contacts/2", { id: 2, email: "bruno@changed-by-someone.example" });
    await s.startExecutor();
    const done = await s.settled(plan);
    expect(done.status).toBe("stale");
    expect(done.outcome?.actions[0]).toMatchObject({
      status: "stale",
      expected: plan.preview.actions[0]!.version,
      now: s.target.etagOf("/contacts/2"),
      changedSincePreview: [{ path: "/email", from: "bruno@old.example", to: "bruno@changed-by-someone.example" }],
    });
    expect(s.writesTo("/contacts/2")).toEqual([]);
  });
});

const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`/bulk/${i}`, { n: i, state: "old" }]));

describe.skipIf(!postgresKind)("executor crashes and concurrency on PostgreSQL", () => {
  const s = executorSuite(postgresKind!, {
    ...many,
    "/crash/before-apply": { state: "old" },
    "/crash/after-apply": { state: "old" },
    "/paused": { state: "old" },
    "/altered": { state: "old" },
    "/multi/a": { v: 0 },
    "/multi/b": { v: 0 },
    "/multi/c": { v: 0 },
  });

  it("3 executors, 100 approved plans: each applied exactly once, none lost", async () => {
    const plans = [];
    for (let i = 0; i < 100; i++) plans.push(await s.propose(`/bulk/${i}`, { state: "new" }));
    await Promise.all(plans.map((p) => s.approve(p)));
    await Promise.all([s.startExecutor(), s.startExecutor(), s.startExecutor()]);
    for (const plan of plans) expect((await s.settled(plan, 60_000)).status).toBe("applied");
    const bulkWrites = s.target.writes().filter((r) => r.path.startsWith("/bulk/"));
    expect(bulkWrites).toHaveLength(100);
    expect(new Set(bulkWrites.map((w) => w.path)).size).toBe(100);
  });

  it("killed after claim and before apply: another executor applies exactly once after the lease", async () => {
    const plan = await s.propose("/crash/before-apply", { state: "new" });
    let revalidating!: () => void;
    const reached = new Promise<void>((r) => (revalidating = r));
    // The Approve re-reads the target first; the hold below is for the executor's re-read.
    await s.approve(plan);
    // Hold the executor's re-read, so it dies having claimed but not written.
    s.target.beforeHandle = (req) => {
      if (req.method === "GET" && req.path === "/crash/before-apply") {
        revalidating();
        return new Promise((r) => setTimeout(r, 3_000));
      }
    };
    const first = await s.startExecutor();
    await reached;
    first.child.kill("SIGKILL");
    expect((await s.view(plan)).status).toBe("executing");
    s.target.beforeHandle = undefined;
    await s.startExecutor();
    const done = await s.settled(plan, 30_000);
    expect(done.status).toBe("applied");
    expect(s.writesTo("/crash/before-apply")).toHaveLength(1);
    const events = await s.database.rows<{ type: string }>(sql`SELECT type FROM audit_events WHERE plan_id = ${plan.id} ORDER BY id`);
    expect(events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing", "plan.reclaimed", "plan.applied"]);
  });

  it("killed after apply and before report: the next executor finds it applied and reports reconciled, one write in all", async () => {
    const plan = await s.propose("/crash/after-apply", { state: "new" });
    let applied!: () => void;
    const wrote = new Promise<void>((r) => (applied = r));
    // The target applies the write but its answer is held: the executor dies not knowing.
    s.target.beforeAnswer = (req) => {
      if (req.method === "PATCH" && req.path === "/crash/after-apply") {
        applied();
        return new Promise((r) => setTimeout(r, 3_000));
      }
    };
    await s.approve(plan);
    const first = await s.startExecutor();
    await wrote;
    expect(s.target.get("/crash/after-apply")).toEqual({ state: "new" });
    first.child.kill("SIGKILL");
    expect((await s.view(plan)).status).toBe("executing");
    s.target.beforeAnswer = undefined;
    await s.startExecutor();
    const done = await s.settled(plan, 30_000);
    expect(done.status).toBe("applied");
    expect(done.outcome?.reconciled).toBe(true);
    expect(s.writesTo("/crash/after-apply")).toHaveLength(1);
  });

  it("a paused executor whose lease was taken over: its late write is stopped by If-Match and its report refused", async () => {
    const plan = await s.propose("/paused", { state: "new" });
    let releaseFirstWrite!: () => void;
    const firstWriteHeld = new Promise<void>((r) => (releaseFirstWrite = r));
    let firstWriteArrived!: () => void;
    const arrived = new Promise<void>((r) => (firstWriteArrived = r));
    let patches = 0;
    s.target.beforeHandle = (req) => {
      if (req.method === "PATCH" && req.path === "/paused" && ++patches === 1) {
        firstWriteArrived();
        return firstWriteHeld; // executor A's write waits in the network
      }
    };
    await s.approve(plan);
    const a = await s.startExecutor();
    await arrived;
    a.child.kill("SIGSTOP"); // A stalls: no heartbeats, its lease runs out
    try {
      await s.startExecutor(); // B takes over after the lease
      const done = await s.settled(plan, 30_000);
      expect(done.status).toBe("applied");
      releaseFirstWrite(); // A's write now reaches the target with the old If-Match
      await waitFor("A's write to be answered", () => s.writesTo("/paused").length === 2);
    } finally {
      a.child.kill("SIGCONT");
    }
    await waitFor("A to finish", async () => /report refused: lease lost|"accepted":false/.test(a.output()), 15_000);
    const [lateWrite, takeoverWrite] = s.writesTo("/paused");
    expect(lateWrite!.answered).toBe(412); // A's write carried the version B's write replaced
    expect(takeoverWrite!.answered).toBe(200);
    expect(s.target.get("/paused")).toEqual({ state: "new" });
    const statuses = await s.database.rows<{ outcome: string }>(sql`SELECT outcome FROM plans WHERE id = ${plan.id}`);
    expect(JSON.parse(statuses[0]!.outcome)).toMatchObject({ status: "applied" });
    const events = await s.database.rows<{ type: string }>(sql`SELECT type FROM audit_events WHERE plan_id = ${plan.id} AND type LIKE 'plan.%' ORDER BY id`);
    expect(events.filter((e) => e.type === "plan.applied")).toHaveLength(1);
  });

  it("a plan document altered in the database after approval is not applied", async () => {
    const plan = await s.propose("/altered", { state: "new" });
    await s.approve(plan);
    // The tamperer disables both guards: the row's (plans_immutable) and the document's (plans_document_fixed).
    await s.database.db.execute(sql`ALTER TABLE plans DISABLE TRIGGER plans_immutable`);
    await s.database.db.execute(sql`ALTER TABLE plans DISABLE TRIGGER plans_document_fixed`);
    try {
      await s.database.db.execute(sql`UPDATE plans SET document = replace(document, '"new"', '"evil"') WHERE id = ${plan.id}`);
    } finally {
      await s.database.db.execute(sql`ALTER TABLE plans ENABLE TRIGGER plans_document_fixed`);
      await s.database.db.execute(sql`ALTER TABLE plans ENABLE TRIGGER plans_immutable`);
    }
    await s.startExecutor();
    const done = await s.settled(plan);
    expect(done.status).toBe("failed");
    expect(done.outcome?.reason).toMatch(/altered after approval/);
    expect(s.writesTo("/altered")).toEqual([]);
    const [event] = await s.database.rows<{ data: string }>(sql`SELECT data FROM audit_events WHERE plan_id = ${plan.id} AND type = 'plan.failed'`);
    expect(JSON.parse(event!.data).reason).toMatch(/altered after approval/);
  });

  it("a multi-action plan whose second write gets 412: first applied, second stale, third never sent", async () => {
    const plan = (
      await submitPlan(s.server.ctx, {
        agent: (await addAgent(s.server.ctx, { name: "multi" })) as never,
        request: {
          title: "three writes",
          actions: ["a", "b", "c"].map((x) => ({ kind: "http.json", target: "crm", path: `/multi/${x}`, op: "merge", body: { v: 1 } })),
        },
      })
    ).plan;
    s.target.beforeHandle = (req) => {
      if (req.method === "PATCH" && req.path === "/multi/b") s.target.set("/multi/b", { v: 99 });
    };
    await s.approve(plan);
    await s.startExecutor();
    const done = await waitFor("the multi-action plan to finish", async () => {
      const [row] = await s.database.rows<{ status: string; outcome: string | null }>(sql`SELECT status, outcome FROM plans WHERE id = ${plan.id}`);
      return row!.outcome ? { status: row!.status, outcome: JSON.parse(row!.outcome) } : undefined;
    });
    expect(done.status).toBe("stale");
    expect(done.outcome).toMatchObject({ status: "stale", partial: true, actions: [{ status: "applied" }, { status: "stale" }, { status: "skipped" }] });
    expect(s.writesTo("/multi/a")).toHaveLength(1);
    expect(s.writesTo("/multi/b")).toHaveLength(1);
    expect(s.writesTo("/multi/c")).toEqual([]);
  });
});
