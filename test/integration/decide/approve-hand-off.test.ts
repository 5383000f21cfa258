import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { asc, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Claim } from "../../../src/contract/executor-api.ts";
import { runExecutor } from "../../../src/executor/run-executor.ts";
import { executorServer } from "../../../src/executor/server-client.ts";
import type { AgentIdentity } from "../../../src/service/agents/authenticate-agent.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { pauseCountersign, resumeCountersign } from "../../../src/service/operations/pause.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { auditEvents, plans } from "../../../src/store/schema.ts";
import { postgresKind } from "../../support/databases.ts";
import { holdPlanRows } from "../../support/hold-plan-rows.ts";
import { mergeRequest, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { useServer } from "../../support/use-harness.ts";
import { waitFor } from "../../support/wait-for.ts";

const EXECUTOR_TOKEN = "executor-token-hand-off-0123456789";

/**
 * An approval reaching quorum on a replica where an executor is long-polling for work
 * claims the plan for that executor in the approval's own transaction, and answers its request
 * after the commit. The claim's rules hold (not while paused, the grant just issued, a fresh
 * token, one executor per plan); without a waiter, or with one that went away, the plan takes
 * the usual path (NOTIFY, claim). The server runs on PostgreSQL and the executor API over HTTP.
 */
describe.skipIf(!postgresKind)("an approval hands its plan to a waiting executor (postgres)", () => {
  const s = useServer(postgresKind!, {
    seed: Object.fromEntries([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => [`/contacts/${n}`, { id: n, email: `${n}@old.example` }])),
    config: (targetUrl) => ({ ...testConfig({ crm: targetConfig(targetUrl) }), executorToken: EXECUTOR_TOKEN }),
    run: { sweepMs: 3_600_000 },
  });
  let agent: AgentIdentity;
  beforeAll(async () => {
    agent = await addAgent(s.server.ctx, { name: "hand-off-agent" });
  });
  afterAll(async () => {
    // A pause left by a failed test must not hold the next file's plans.
    await resumeCountersign(s.server.ctx, { operator: { via: "cli", name: "test" } }).catch(() => undefined);
  });

  let contact = 0;
  const submit = async () =>
    (
      await submitPlan(s.server.ctx, {
        agent,
        request: mergeRequest({
          title: `hand-off ${++contact}`,
          actions: [{ kind: "http.json", target: "crm", path: `/contacts/${contact}`, op: "merge", body: { email: `${contact}@new.example` } }],
        }),
      })
    ).plan;
  const approve = (plan: { id: string; hash: string }) =>
    decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
  const rowOf = async (planId: string) => (await s.database.db.select().from(plans).where(eq(plans.id, planId)))[0]!;
  const eventsOf = async (planId: string) =>
    (await s.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map(
      (e) => e.type,
    );
  const waiting = () => s.server.ctx.signals.claimersWaiting;

  /** A long-poll of POST /v1/executor/claim over HTTP, as an executor sends it; resolves to the claim, or undefined on 204. */
  function longPoll(signal?: AbortSignal): Promise<Claim | undefined> {
    return fetch(`${s.server.url}/v1/executor/claim?wait=20`, {
      method: "POST",
      headers: { authorization: `Bearer ${EXECUTOR_TOKEN}` },
      ...(signal ? { signal } : {}),
    }).then(async (res) => (res.status === 204 ? undefined : ((await res.json()) as Claim)));
  }

  it("a waiter that cannot verify the grant's key is handed nothing: the plan stays approved for an executor that can", async () => {
    const plan = await submit();
    const gone = new AbortController();
    // An executor holding only another key (one the server verifies but no longer signs with, say).
    // First in the file: no approval of an earlier test can wake this wait (plan-signals.ts).
    const wait = s.server.ctx.signals.waitClaimable(60_000, gone.signal, ["some-other-key"]);
    try {
      expect(waiting()).toBe(1);
      // Not claimed for it; the approval's NOTIFY may still wake it to look (and find nothing its key verifies).
      expect((await approve(plan)).status).toBe("approved");
      expect((await rowOf(plan.id)).status).toBe("approved");
      expect((await claimApproved(s.server.ctx))?.plan.id).toBe(plan.id);
    } finally {
      gone.abort();
      expect(await wait).toBeUndefined();
    }
  });

  it("hands the plan to a running executor in the approval's transaction; the PATCH arrives and the chain verifies", async () => {
    const executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: (await testGrantKeys()).verifying,
      environment: "test",
      targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
    });
    try {
      const plan = await submit();
      await waitFor("the executor to be long-polling", () => waiting() === 1);
      const result = await approve(plan);
      expect(result.status).toBe("executing");
      const row = await rowOf(plan.id);
      expect(row.status === "executing" || row.status === "applied").toBe(true);
      expect(row.claims).toBe(1);
      await waitFor("the PATCH at the target and the plan applied", async () => (await rowOf(plan.id)).status === "applied");
      expect(s.target.writes().filter((w) => w.method === "PATCH" && w.path === `/contacts/${contact}`)).toHaveLength(1);
      expect(await eventsOf(plan.id)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing", "plan.applied"]);
      expect((await verifyAudit(s.server.ctx)).ok).toBe(true);
    } finally {
      await executor.stop();
    }
  });

  it("answers the waiting request with the claim it committed: the grant just issued, a fresh token and lease", async () => {
    const plan = await submit();
    const claim = longPoll();
    await waitFor("the long-poll to wait", () => waiting() === 1);
    expect((await approve(plan)).status).toBe("executing");
    const handed = (await claim)!;
    const row = await rowOf(plan.id);
    expect(handed.plan.id).toBe(plan.id);
    expect(handed.grant).toBe(row.grant);
    expect(handed.claimToken).toBe(row.claimToken);
    expect(handed.leaseExpiresAt).toBe(row.leaseExpiresAt!.toISOString());
    expect(handed.preview.actions).toHaveLength(1);
    // Fencing by that token: a heartbeat with it holds; nobody else gets the plan.
    const beat = await fetch(`${s.server.url}/v1/executor/claims/${handed.claimToken}/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${EXECUTOR_TOKEN}` },
    });
    expect(beat.status).toBe(200);
    expect(await claimApproved(s.server.ctx)).toBeUndefined();
    const [executing] = await s.database.db
      .select({ data: auditEvents.data })
      .from(auditEvents)
      .where(sql`${auditEvents.planId} = ${plan.id} AND ${auditEvents.type} = 'plan.executing'`);
    expect(executing!.data).toEqual({ claim: 1, leaseExpiresAt: handed.leaseExpiresAt });
  });

  it("writes the handed claim straight to the wire: JSON with its Content-Length and the request's id, not chunked", async () => {
    const plan = await submit();
    const answer = new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${s.server.url}/v1/executor/claim?wait=20`,
        { method: "POST", headers: { authorization: `Bearer ${EXECUTOR_TOKEN}`, "x-request-id": "claim-on-the-wire-1" } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end();
    });
    answer.catch(() => undefined); // awaited below; a failure then fails the test, not the run
    await waitFor("the long-poll to wait", () => waiting() === 1);
    expect((await approve(plan)).status).toBe("executing");
    const res = await answer;
    expect(res.status, res.body).toBe(200);
    expect(res.headers["x-request-id"]).toBe("claim-on-the-wire-1");
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.headers["transfer-encoding"]).toBeUndefined();
    expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.body));
    const claim = JSON.parse(res.body) as Claim;
    expect(claim.plan.id).toBe(plan.id);
    expect(claim.claimToken).toBe((await rowOf(plan.id)).claimToken);
  });

  it("while paused, hands nothing: the plan waits approved and the executor keeps waiting, then is claimed once resumed", async () => {
    await pauseCountersign(s.server.ctx, { operator: { via: "cli", name: "oncall" }, reason: "incident: hand-off test" });
    let claim: Promise<Claim | undefined> | undefined;
    try {
      const plan = await submit();
      claim = longPoll();
      await waitFor("the long-poll to wait", () => waiting() === 1);
      expect((await approve(plan)).status).toBe("approved");
      expect((await rowOf(plan.id)).status).toBe("approved");
      await resumeCountersign(s.server.ctx, { operator: { via: "cli", name: "oncall" } });
      // Resumed: the waiting executor's re-check claims it (the ordinary claim).
      const claimed = (await claim)!;
      expect(claimed.plan.id).toBe(plan.id);
      expect(await eventsOf(plan.id)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing"]);
    } finally {
      await resumeCountersign(s.server.ctx, { operator: { via: "cli", name: "oncall" } }).catch(() => undefined);
      await claim?.catch(() => undefined);
    }
  });

  it("a waiter whose request went away while the approval was deciding is handed nothing: the plan stays approved for the normal claim", async () => {
    const plan = await submit();
    const gone = new AbortController();
    const claim = longPoll(gone.signal).catch(() => "aborted" as const);
    await waitFor("the long-poll to wait", () => waiting() === 1);
    // The approval takes the waiter, then waits for the plan's row lock, held elsewhere.
    const lock = await holdPlanRows(s.database, [plan.id]);
    const approval = approve(plan);
    await waitFor(
      "the approval to wait for the row lock",
      async () =>
        (
          await s.database.rows<{ n: number }>(
            sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        )[0]!.n === 1,
    );
    gone.abort();
    expect(await claim).toBe("aborted");
    await waitFor("the server to see the request gone", () => waiting() === 0);
    await lock.release();
    expect((await approval).status).toBe("approved");
    const claimed = await claimApproved(s.server.ctx);
    expect(claimed?.plan.id).toBe(plan.id);
    expect((await rowOf(plan.id)).claims).toBe(1);
  });

  it("two approvals racing for one waiter: one hands off, the other plan is claimed normally", async () => {
    const [a, b] = [await submit(), await submit()];
    const claim = longPoll();
    await waitFor("the long-poll to wait", () => waiting() === 1);
    const results = await Promise.all([approve(a), approve(b)]);
    expect(results.map((r) => r.status).sort()).toEqual(["approved", "executing"]);
    const [handedPlan, otherPlan] = results[0]!.status === "executing" ? [a, b] : [b, a];
    expect((await claim)?.plan.id).toBe(handedPlan.id);
    const other = await waitFor(
      "the other plan claimed by an ordinary claim",
      async () => (await claimApproved(s.server.ctx)) ?? ((await rowOf(otherPlan.id)).status === "executing" ? "claimed elsewhere" : undefined),
    );
    expect(other === "claimed elsewhere" || other.plan.id === otherPlan.id).toBe(true);
    expect((await rowOf(handedPlan.id)).claims).toBe(1);
    expect((await rowOf(otherPlan.id)).claims).toBe(1);
    expect((await verifyAudit(s.server.ctx)).ok).toBe(true);
  });

  it("no waiter: the approval is announced and the plan claimed as usual (approved, NOTIFY, then the claim)", async () => {
    const plan = await submit();
    expect(waiting()).toBe(0);
    expect((await approve(plan)).status).toBe("approved");
    expect((await claimApproved(s.server.ctx))?.plan.id).toBe(plan.id);
    expect(await eventsOf(plan.id)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing"]);
  });
});
