import { rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { getPlan } from "../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { runCli } from "../support/cli.ts";
import { openThrowawayPostgres, type TestDatabaseKind } from "../support/databases.ts";
import { READ_TOKEN, targetConfig, testConfig } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";
import { spawnExecutor, writeExecutorConfig, type SpawnedExecutor } from "../support/executor-config-file.ts";

const EXECUTOR_TOKEN = "executor-token-pause-0123456789";
const adminUrl = process.env.TEST_DATABASE_URL;

/**
 * Pause with an executor running: the server, `countersign executor` as its own
 * process, and `countersign pause` / `resume` as operators run them, all on one PostgreSQL
 * database (the CLI acts on the database the server uses). A plan the executor is writing when
 * the pause comes finishes and reports; a plan approved during the pause is not applied however
 * many times the executor asks, and is applied once resumed.
 */
describe.skipIf(!adminUrl)("pause with a spawned executor running (postgres)", () => {
  let databaseUrl = "";
  /** A database of this file's own, whose URL the CLI processes are given. */
  const kind: TestDatabaseKind = {
    name: "postgres",
    async open() {
      const database = await openThrowawayPostgres(adminUrl!);
      databaseUrl = database.url;
      await database.migrate();
      return database;
    },
  };
  let dir: string;
  const s = useServer(kind, {
    seed: { "/contacts/1": { id: 1, email: "a@old.example" }, "/contacts/2": { id: 2, email: "b@old.example" } },
    config: (targetUrl) => {
      ({ dir } = writeExecutorConfig(targetUrl, { approvers: ["U0ALICE", "U0BOB"], prefix: "countersign-pause-" }));
      return { ...testConfig({ crm: targetConfig(targetUrl) }), executorToken: EXECUTOR_TOKEN };
    },
    run: { sweepMs: 3_600_000 },
  });

  /**
   * Between the executor and the server: counts the claims answered "nothing for you" (204), and
   * asks for 1 s long-polls instead of the executor's 25 s, so several empty claims pass in a few
   * seconds. Everything else goes through unchanged.
   */
  let proxy: Server;
  let emptyClaims = 0;
  let executor: SpawnedExecutor;
  let agent: AgentIdentity;
  const cli = (args: string[]) =>
    runCli(args, { cwd: dir, env: { DATABASE_URL: databaseUrl, COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"), CRM_READ: READ_TOKEN } });

  beforeAll(async () => {
    proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const url = new URL(req.url ?? "/", s.server.url);
      const claiming = url.pathname === "/v1/executor/claim";
      if (claiming) url.searchParams.set("wait", "1");
      try {
        const answer = await fetch(url, {
          method: req.method,
          headers: { authorization: req.headers.authorization ?? "", "content-type": req.headers["content-type"] ?? "application/json" },
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        });
        if (claiming && answer.status === 204) emptyClaims++;
        res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await answer.arrayBuffer()));
      } catch {
        res.destroy(); // the server is closing at the end of the file (a claim was still in flight)
      }
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    executor = await spawnExecutor({ dir, serverUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, executorToken: EXECUTOR_TOKEN });
    agent = await addAgent(s.server.ctx, { name: "pause-agent" });
  }, 180_000);

  afterAll(async () => {
    await executor?.stop();
    proxy?.closeAllConnections();
    await new Promise<void>((r) => (proxy ? proxy.close(() => r()) : r()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const statusOf = async (planId: string) => (await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${planId}`))[0]!.status;
  const patchesTo = (p: string) => s.target.writes().filter((r) => r.method === "PATCH" && r.path === p).length;
  async function approve(contact: number) {
    const { plan } = await submitPlan(s.server.ctx, {
      agent,
      request: {
        title: `Contact ${contact}`,
        actions: [{ kind: "http.json", target: "crm", path: `/contacts/${contact}`, op: "merge", body: { email: `${contact}@new.example` } }],
      },
    });
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    return plan;
  }

  it("the plan being written finishes and reports; one approved during the pause waits through several claims, held, and is applied after resume", async () => {
    // The executor takes plan A and starts writing; the target holds its PATCH until released.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    s.target.beforeAnswer = async (req) => {
      if (req.method === "PATCH" && req.path === "/contacts/1") await held;
    };
    const a = await approve(1);
    await waitFor("the executor to be writing plan A", () => patchesTo("/contacts/1") === 1);
    expect(await statusOf(a.id)).toBe("executing");

    const paused = await cli(["pause", "--reason", "incident 99: CRM flaky", "--by", "oncall"]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(/^Paused by oncall at /);
    expect((await cli(["pause", "--status"])).stdout).toMatch(/^Paused since .* by oncall \(cli\): incident 99: CRM flaky/);

    const b = await approve(2);
    release(); // plan A's write goes through; the executor reports it although Countersign is paused
    await waitFor("plan A to be applied", async () => (await statusOf(a.id)) === "applied");

    const before = emptyClaims;
    await waitFor("three more empty claims with plan B approved", () => emptyClaims >= before + 3);
    expect(await statusOf(b.id)).toBe("approved");
    expect(patchesTo("/contacts/2")).toBe(0);
    expect((await getPlan(s.server.ctx, { agent, planId: b.id })).held).toMatchObject({ by: "pause", reason: "incident 99: CRM flaky" });

    const resumed = await cli(["resume", "--by", "oncall"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    await waitFor("plan B to be applied after resume", async () => (await statusOf(b.id)) === "applied");
    expect(patchesTo("/contacts/2")).toBe(1);
    expect(s.target.get("/contacts/2")).toMatchObject({ email: "2@new.example" });
  });
});
