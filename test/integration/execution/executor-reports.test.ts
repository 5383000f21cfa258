import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { runExecutor } from "../../../src/executor/run-executor.ts";
import { executorServer } from "../../../src/executor/server-client.ts";
import type { Outcome } from "../../../src/plan/outcome.ts";
import { createApp } from "../../../src/server/app.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";
import { mergeRequest, silentLogger, targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { waitFor } from "../../support/wait-for.ts";

const EXECUTOR_TOKEN = "executor-token-for-reports";

/**
 * The executor against the real server app (its HTTP handler in process) and a real target:
 * what a target puts into an outcome must never make the report unstorable, and a target
 * document that cannot be hashed must end the plan as failed, not leave it `executing`.
 */
describe.each(databaseKinds)("executor reports on $name", (kind) => {
  const h = useHarness(kind);
  let app: ReturnType<typeof createApp>;

  beforeAll(async () => {
    app = createApp(h.ctx, { executorToken: EXECUTOR_TOKEN });
  });

  /** Submits and approves a plan, runs one executor until the plan leaves `approved`/`executing`, and returns the row. */
  async function executeApproved(path: string, afterApproval: () => void = () => {}) {
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path, op: "merge", body: { email: "new@example.com" } }] }),
    });
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");
    afterApproval();
    const inProcess: typeof fetch = async (input, init) => app.fetch(new Request(input as string, init));
    const executor = runExecutor({
      server: executorServer(h.ctx.config.publicUrl, EXECUTOR_TOKEN, inProcess),
      keys: (await testGrantKeys()).verifying,
      environment: "test",
      targets: { crm: targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
      now: h.clock.now,
    });
    try {
      return await waitFor(
        "the plan to reach a final status",
        async () => {
          const [row] = await h.database.db.select().from(plans).where(eq(plans.id, plan.id));
          return row && !["approved", "executing"].includes(row.status) ? row : undefined;
        },
        60_000,
      );
    } finally {
      await executor.stop();
    }
  }

  it("a target that answers a write with a NUL in its error → failed, recorded with the detail (not a report the server cannot store)", async () => {
    h.target.set("/contacts/nul", { email: "old@example.com" });
    const writes = h.target.writes().length;
    h.target.beforeHandle = (r) => {
      // A 4xx: the target's last word (a 5xx would be retried within the lease first).
      if (r.method !== "GET" && r.path === "/contacts/nul") h.target.failWith = { status: 400, body: "database \u0000 on fire" };
    };
    try {
      const row = await executeApproved("/contacts/nul");
      expect(row.status).toBe("failed");
      expect(row.claims).toBe(1);
      const outcome = row.outcome as Outcome;
      // The target's words reach the outcome, with the NUL made storable.
      expect(outcome.actions[0]!.detail).toMatch(/HTTP 400.*database \uFFFD on fire/);
      expect(JSON.stringify(outcome)).not.toContain("\\u0000");
    } finally {
      h.target.beforeHandle = undefined;
      h.target.failWith = undefined;
    }
    expect(h.target.writes().length - writes).toBe(1);
  });

  it("a lone surrogate in the target since the preview → failed with the reason, claimed once, zero writes", async () => {
    h.target.set("/contacts/lone", { email: "old@example.com" });
    const writes = h.target.writes().length;
    const row = await executeApproved("/contacts/lone", () => h.target.set("/contacts/lone", { email: "old@example.com", note: "\uD800" }));
    expect(row.status).toBe("failed");
    expect(row.claims).toBe(1);
    expect((row.outcome as Outcome).reason).toMatch(/cannot be hashed exactly: at \/note, the string contains a lone UTF-16 surrogate/);
    expect(h.target.writes().length - writes).toBe(0);
  });
});
