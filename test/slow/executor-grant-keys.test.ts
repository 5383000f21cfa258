import path from "node:path";
import { rmSync } from "node:fs";
import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { generateGrantKeys } from "../../src/grant/keys.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { getPlan } from "../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { runCli } from "../support/cli.ts";
import { pglite } from "../support/databases.ts";
import { spawnExecutor, writeExecutorConfig, type SpawnedExecutor } from "../support/executor-config-file.ts";
import { READ_TOKEN, targetConfig, testConfig, WRITE_TOKEN } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";

const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";

/**
 * An executor holding the wrong grant public key, as its own process against the real server:
 * it refuses to start, naming the variable; an approval is never spent on a key mismatch (the
 * plan stays approved, held, until an executor with the right key applies it once); a grant
 * tampered with under the right key id still fails.
 */
describe("executor grant keys", () => {
  let dir: string;
  const e = useServer(pglite, {
    seed: { "/keys/held": { state: "old" }, "/keys/refused": { state: "old" }, "/keys/tampered": { state: "old" } },
    config: (targetUrl) => {
      ({ dir } = writeExecutorConfig(targetUrl, { approvers: ["U0ALICE"], prefix: "countersign-grant-keys-" }));
      return { ...testConfig({ crm: targetConfig(targetUrl) }), executorToken: EXECUTOR_TOKEN, executor: { leaseSeconds: 5 } };
    },
  });
  let agent: AgentIdentity;
  const executors: SpawnedExecutor[] = [];
  const stopPolling = new AbortController();

  const propose = async (p: string) =>
    (
      await submitPlan(e.server.ctx, {
        agent,
        request: { title: `change ${p}`, actions: [{ kind: "http.json", target: "crm", path: p, op: "merge", body: { state: "new" } }] },
      })
    ).plan;
  const approve = (plan: PlanView) =>
    decide(e.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });
  const view = (plan: PlanView) => getPlan(e.server.ctx, { agent, planId: plan.id });
  const settled = (plan: PlanView) =>
    waitFor(`plan ${plan.id} to finish`, async () => {
      const v = await view(plan);
      return ["applied", "failed", "stale", "expired"].includes(v.status) && v;
    });
  const writesTo = (p: string) => e.target.writes().filter((r) => r.path === p);
  const executorEnv = (publicPem: string) => ({
    COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
    COUNTERSIGN_URL: e.server.url,
    COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN,
    COUNTERSIGN_GRANT_PUBLIC_KEY: publicPem,
    CRM_READ: READ_TOKEN,
    CRM_WRITE: WRITE_TOKEN,
    LOG_LEVEL: "info",
  });

  beforeAll(async () => {
    agent = await addAgent(e.server.ctx, { name: "grant-keys-e2e" });
  });
  afterEach(async () => {
    await Promise.all(executors.splice(0).map((x) => x.stop()));
  });
  afterAll(() => {
    stopPolling.abort();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an executor holding another public key refuses to start, in one line naming COUNTERSIGN_GRANT_PUBLIC_KEY and both key ids; the approval is not spent", async () => {
    const plan = await propose("/keys/refused");
    await approve(plan);
    const wrong = await generateGrantKeys();
    const run = await runCli(["executor"], { cwd: dir, env: executorEnv(wrong.publicPem) });
    expect(run.code).not.toBe(0);
    const line = run.stderr.trim();
    expect(line.split("\n")).toHaveLength(1);
    expect(line).toMatch(/^countersign: COUNTERSIGN_GRANT_PUBLIC_KEY: /);
    expect(line).toContain(`\`${wrong.kid}\``);
    expect(line).toContain(`\`${e.server.ctx.grantKey.kid}\``);
    expect((await view(plan)).status).toBe("approved");
    expect(writesTo("/keys/refused")).toEqual([]);
  });

  it("a plan approved while only a mismatched executor asks for work stays approved, held for the key; an executor with the right key then applies it once", async () => {
    const wrong = await generateGrantKeys();
    const polls: number[] = [];
    // Asks for work as an executor holding only the wrong key would, until the test ends.
    const polling = (async () => {
      while (!stopPolling.signal.aborted) {
        const res = await fetch(`${e.server.url}/v1/executor/claim?wait=2&kid=${wrong.kid}`, {
          method: "POST",
          headers: { authorization: `Bearer ${EXECUTOR_TOKEN}` },
          signal: stopPolling.signal,
        }).catch(() => undefined);
        if (res) polls.push(res.status);
      }
    })();
    await waitFor("the mismatched executor's first claim", () => polls.length > 0 || undefined);
    const plan = await propose("/keys/held");
    await approve(plan);
    const held = await waitFor("the plan to be shown held", async () => (await view(plan)).held);
    expect(held).toMatchObject({ by: "grant_key_mismatch", grantKid: e.server.ctx.grantKey.kid, executorKids: [wrong.kid] });
    expect((await view(plan)).status).toBe("approved");
    stopPolling.abort();
    await polling;
    expect(polls.every((status) => status === 204)).toBe(true);
    expect(writesTo("/keys/held")).toEqual([]);

    executors.push(await spawnExecutor({ dir, serverUrl: e.server.url, executorToken: EXECUTOR_TOKEN }));
    const done = await settled(plan);
    expect(done.status).toBe("applied");
    expect(writesTo("/keys/held")).toHaveLength(1);
  });

  it("a grant tampered with under the server's key id (its signature changed) is still failed, and nothing is written", async () => {
    const plan = await propose("/keys/tampered");
    await approve(plan);
    const [row] = await e.database.rows<{ grant: string }>(sql`SELECT "grant" FROM plans WHERE id = ${plan.id}`);
    const [header, payload, signature] = row!.grant.split(".") as [string, string, string];
    const i = Math.floor(signature.length / 2);
    const forged = `${header}.${payload}.${signature.slice(0, i)}${signature[i] === "A" ? "B" : "A"}${signature.slice(i + 1)}`;
    // The tamperer disables the guard that keeps an issued grant fixed.
    await e.database.db.execute(sql`ALTER TABLE plans DISABLE TRIGGER plans_immutable`);
    try {
      await e.database.db.execute(sql`UPDATE plans SET "grant" = ${forged} WHERE id = ${plan.id}`);
    } finally {
      await e.database.db.execute(sql`ALTER TABLE plans ENABLE TRIGGER plans_immutable`);
    }
    expect((await view(plan)).held).toBeUndefined();
    executors.push(await spawnExecutor({ dir, serverUrl: e.server.url, executorToken: EXECUTOR_TOKEN }));
    const done = await settled(plan);
    expect(done.status).toBe("failed");
    expect(done.outcome?.reason).toMatch(/signature verification failed/);
    expect(writesTo("/keys/tampered")).toEqual([]);
  });
});
