import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { LimitsConfig } from "../../../src/config/schema.ts";
import { createApp } from "../../../src/server/app.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { hashAgentKey } from "../../../src/service/agents/agent-keys.ts";
import { readAgentByKeyWithUsage } from "../../../src/service/agents/agent-limits.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";

/** Each test has its own harness (agent, clock, target) on the suite's database, and its own limits. */
function limited(h: { ctx: ServiceContext }, limits: Partial<LimitsConfig>): ServiceContext {
  return { ...h.ctx, config: { ...h.ctx.config, limits: { plansPerMinute: 60, maxPending: 100, agents: {}, ...limits } } };
}

describe.each(databaseKinds)("agent limits on $name", (kind) => {
  const base = useHarness(kind);
  const hMinute = base.another({});
  const hPending = base.another({});
  const hRetry = base.another({});
  const hOwn = base.another({});
  const hOther = base.another({});
  const hRace = base.another({});
  const hDefaults = base.another({});
  const hHttp = base.another({});
  const hKeyRead = base.another({});
  /** Previews of a burst wait on one another on a loaded machine: more time than the default 5 s. */
  const hBurst = base.another({ targets: (url) => ({ crm: targetConfig(url, { timeoutMs: 60_000 }) }) });

  it("refuses the plan beyond plansPerMinute until the oldest in the window leaves it, without reading the target", async () => {
    const h = hMinute;
    const ctx = limited(h, { plansPerMinute: 3 });
    for (const title of ["first", "second", "third"]) {
      expect((await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title }) })).created).toBe(true);
      h.clock.advance(10);
    }
    const reads = h.target.requests.length;
    const err = await refusal(submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "fourth" }) }));
    expect(err.code).toBe("rate_limited");
    expect(err.message).toBe(`agent ${h.agent.name} submitted 3 plans in the last minute; limits.plansPerMinute is 3. Retry after 30 s.`);
    // The first plan, 30 s old, leaves the minute 30 s from now.
    expect(err.details).toEqual({ retryAfterSeconds: 30, limit: "limits.plansPerMinute", value: 3 });
    expect(h.target.requests.length, "a limited submission reads no target").toBe(reads);

    h.clock.advance(29);
    expect((await refusal(submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "still fourth" }) }))).details?.retryAfterSeconds).toBe(1);
    h.clock.advance(1);
    expect((await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "fourth, a minute after the first" }) })).created).toBe(true);
  });

  it("refuses beyond maxPending, counting pending and approved plans, with Retry-After at most 30 s or the soonest expiry", async () => {
    const h = hPending;
    const ctx = limited(h, { maxPending: 2 });
    const { plan: first } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "one", ttlSeconds: 600 }) });
    const { plan: second } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "two", ttlSeconds: 300 }) });
    expect((await decide(ctx, { planId: first.id, hash: first.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");
    h.clock.advance(120); // out of the per-minute window: only maxPending can refuse now

    const err = await refusal(submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "three" }) }));
    expect(err.code).toBe("rate_limited");
    expect(err.message).toBe(`agent ${h.agent.name} has 2 plans pending or approved; limits.maxPending is 2. Retry after 30 s.`);
    expect(err.details).toEqual({ retryAfterSeconds: 30, limit: "limits.maxPending", value: 2 });

    h.clock.advance(168); // the pending plan expires in 12 s: sooner than 30
    expect((await refusal(submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "three" }) }))).details?.retryAfterSeconds).toBe(12);

    await cancelPlan(ctx, { agent: h.agent, planId: second.id });
    expect((await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "three, once two left" }) })).created).toBe(true);
  });

  it("never limits an idempotent retry of an existing plan", async () => {
    const h = hRetry;
    const ctx = limited(h, { plansPerMinute: 1, maxPending: 1 });
    const request = mergeRequest({ title: "once", idempotencyKey: "limits-retry-1" });
    const { plan } = await submitPlan(ctx, { agent: h.agent, request });
    expect((await refusal(submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "another" }) }))).code).toBe("rate_limited");
    const retried = await submitPlan(ctx, { agent: h.agent, request });
    expect(retried).toMatchObject({ created: false, plan: { id: plan.id } });
  });

  it("answers two racing submissions with one idempotencyKey with one plan, even when the first takes the last place", async () => {
    const h = hRetry;
    const ctx = limited(h, { plansPerMinute: 1 });
    // Several rounds: the twin may commit before the other's key lookup, between it and the
    // limit check (which then counts the twin), or after the check; none may be refused.
    for (let round = 1; round <= 6; round++) {
      h.clock.advance(3600); // the previous plan has left the minute; maxPending is not in play here
      const request = mergeRequest({ title: `racing retries ${round}`, idempotencyKey: `limits-race-${round}` });
      const [a, b] = await Promise.all([submitPlan(ctx, { agent: h.agent, request }), submitPlan(ctx, { agent: h.agent, request })]);
      expect(a.plan.id).toBe(b.plan.id);
      expect([a.created, b.created].sort()).toEqual([false, true]);
    }
  });

  it("applies an agent's own limits over the top-level ones, and names their key", async () => {
    const ctx = limited(hOwn, { plansPerMinute: 1, agents: { [hOwn.agent.name]: { plansPerMinute: 3 }, "not-yet-added": { maxPending: 1 } } });
    for (let i = 0; i < 3; i++) await submitPlan(ctx, { agent: hOwn.agent, request: mergeRequest({ title: `own ${i}` }) });
    const err = await refusal(submitPlan(ctx, { agent: hOwn.agent, request: mergeRequest({ title: "own 4" }) }));
    expect(err.message).toContain(`limits.agents.${hOwn.agent.name}.plansPerMinute is 3`);

    const other = { ...ctx, clock: hOther.clock.now };
    await submitPlan(other, { agent: hOther.agent, request: mergeRequest({ title: "other 1" }) });
    expect((await refusal(submitPlan(other, { agent: hOther.agent, request: mergeRequest({ title: "other 2" }) }))).message).toContain(
      "limits.plansPerMinute is 1",
    );
  });

  it("over HTTP, judges the usage read with the key by the agent's own limits or the top-level ones", async () => {
    // POST /v1/plans reads the agent and its usage in one statement, the limits picked in SQL by
    // the name it finds (readAgentByKeyWithUsage): they must be the ones limitsOf gives.
    const stamp = `${kind.name.toLowerCase()}-${Date.now()}`;
    const own = await addAgent(hHttp.ctx, { name: `own-${stamp}` });
    const other = await addAgent(hHttp.ctx, { name: `other-${stamp}` });
    const ctx = limited(hHttp, { plansPerMinute: 1, agents: { [own.name]: { plansPerMinute: 2 }, "not-yet-added": { maxPending: 1 } } });
    const api = createApp(ctx);
    const submit = (key: string, title: string) =>
      api.request("/v1/plans", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(mergeRequest({ title })),
      });
    const refused = async (res: Response) => ({ status: res.status, ...((await res.json()) as { error: { code: string; message: string } }).error });

    expect((await submit(own.key, "own 1")).status).toBe(201);
    expect((await submit(own.key, "own 2")).status).toBe(201);
    expect(await refused(await submit(own.key, "own 3"))).toMatchObject({
      status: 429,
      code: "rate_limited",
      message: expect.stringContaining(`limits.agents.${own.name}.plansPerMinute is 2`),
    });
    expect((await submit(other.key, "other 1")).status).toBe(201);
    expect(await refused(await submit(other.key, "other 2"))).toMatchObject({
      status: 429,
      code: "rate_limited",
      message: expect.stringContaining("limits.plansPerMinute is 1"),
    });
    expect(await refused(await submit("not-a-key", "nobody"))).toMatchObject({ status: 401, code: "unauthorized" });
    // Far from the limits (the bound, not the counts, decides): admitted.
    hHttp.clock.advance(3600);
    const roomy = createApp(limited(hHttp, {}));
    expect(
      (
        await roomy.request("/v1/plans", {
          method: "POST",
          headers: { authorization: `Bearer ${other.key}`, "content-type": "application/json" },
          body: JSON.stringify(mergeRequest({ title: "other, roomy" })),
        })
      ).status,
    ).toBe(201);
  });

  it("reads a submit's usage with its key: far from the limits the bound alone, in one statement; near them the counts, in a second", async () => {
    const h = hKeyRead;
    const agent = await addAgent(h.ctx, { name: `key-read-${kind.name.toLowerCase()}-${Date.now()}` });
    // Every statement sent past the query builder, still run on the suite's database.
    const sent: string[] = [];
    const counting = (c: ServiceContext): ServiceContext => ({
      ...c,
      database: { ...c.database, query: (text, params) => (sent.push(text), c.database.query(text, params)) },
    });
    const read = async (limits: Partial<LimitsConfig>) => {
      sent.length = 0;
      const found = await readAgentByKeyWithUsage(counting(limited(h, limits)), hashAgentKey(agent.key));
      return { usage: found?.read.usage, statements: sent.length };
    };

    const roomy = limited(h, { plansPerMinute: 1000, maxPending: 1000 });
    const submittedAt = h.clock.now().getTime();
    const plans = [];
    for (const ttlSeconds of [600, 300, 900])
      plans.push((await submitPlan(roomy, { agent, request: mergeRequest({ title: `key read ${ttlSeconds}`, ttlSeconds }) })).plan);
    await cancelPlan(roomy, { agent, planId: plans[1]!.id });
    h.clock.advance(120); // all three have left the minute; two are still open

    // Far (3 stored, 16 or more below both limits): the bound stands for both counts.
    expect(await read({ plansPerMinute: 1000, maxPending: 1000 })).toEqual({
      usage: { recent: 3, oldestRecentMs: null, open: 3, soonestExpiryMs: null },
      statements: 1,
    });
    // Near maxPending (3 + 16 > 10): counted, so the minute is empty and the cancelled plan is not open.
    expect(await read({ plansPerMinute: 1000, maxPending: 10 })).toEqual({
      usage: { recent: 0, oldestRecentMs: null, open: 2, soonestExpiryMs: submittedAt + 600_000 },
      statements: 2,
    });
    // Near plansPerMinute, by the agent's own limits: the plans of the last minute are counted.
    await submitPlan(roomy, { agent, request: mergeRequest({ title: "key read, in the minute" }) });
    const recentAt = h.clock.now().getTime();
    expect(await read({ plansPerMinute: 1000, maxPending: 1000, agents: { [agent.name]: { plansPerMinute: 5 } } })).toEqual({
      usage: { recent: 1, oldestRecentMs: recentAt, open: 3, soonestExpiryMs: submittedAt + 600_000 },
      statements: 2,
    });
    expect((await read({})).statements).toBe(1); // the defaults (60, 100) are far from 4

    // An unknown key: no agent, and no second statement.
    sent.length = 0;
    expect(await readAgentByKeyWithUsage(counting(roomy), hashAgentKey("not-a-key"))).toBeUndefined();
    expect(sent).toHaveLength(1);

    // Over HTTP: refused near maxPending by the counts (3 open), admitted far from it by the bound.
    const submit = (limits: Partial<LimitsConfig>, title: string) =>
      createApp(limited(h, limits)).request("/v1/plans", {
        method: "POST",
        headers: { authorization: `Bearer ${agent.key}`, "content-type": "application/json" },
        body: JSON.stringify(mergeRequest({ title })),
      });
    const refused = await submit({ maxPending: 3 }, "over maxPending");
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      `agent ${agent.name} has 3 plans pending or approved; limits.maxPending is 3. Retry after 30 s.`,
    );
    expect((await submit({ maxPending: 40 }, "far from maxPending")).status).toBe(201);
  });

  it("holds the limit when one agent submits 20 plans at once with plansPerMinute 5", async () => {
    const h = hRace;
    const ctx = limited(h, { plansPerMinute: 5 });
    const reads = h.target.requests.length;
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `race ${i}` }) })),
    );
    const accepted = results.filter((r) => r.status === "fulfilled");
    const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as { code?: string; details?: Record<string, unknown> }] : []));
    expect(accepted).toHaveLength(5);
    expect(refused.map((e) => e.code)).toEqual(Array(15).fill("rate_limited"));
    for (const e of refused) expect(e.details?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    const stored = await base.database.rows<{ n: number }>(sqlCount(h.agent.id));
    expect(Number(stored[0]!.n)).toBe(5);
    // All 20 usage reads are sent before any preview returns, so more than 5 pass them and read
    // the target: it is the INSERT's guard that held the limit for those.
    expect(h.target.requests.length - reads).toBeGreaterThan(5);
  });

  it("never lets 60 submissions at once go beyond plansPerMinute 20, where most are admitted without waiting on each other", async () => {
    const h = hBurst;
    const ctx = limited(h, { plansPerMinute: 20 });
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `burst ${i}` }) })),
    );
    const accepted = results.filter((r) => r.status === "fulfilled").length;
    const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as { code?: string }] : []));
    // A submission that counted far from the limit and then, once in flight, found itself near it
    // is refused rather than risk going over: fewer than 20 may get in, never more.
    expect(accepted).toBeLessThanOrEqual(20);
    expect(accepted).toBeGreaterThanOrEqual(12);
    expect(refused.every((e) => e.code === "rate_limited")).toBe(true);
    const since = new Date(h.clock.now().getTime() - 60_000).toISOString();
    const [stored] = await base.database.rows<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM plans WHERE agent_id = ${h.agent.id} AND created_at > ${since}::timestamptz`,
    );
    expect(Number(stored!.n)).toBe(accepted);
  });

  it("applies 60 a minute and 100 open by default, when the config has no limits block", async () => {
    const ctx: ServiceContext = { ...hDefaults.ctx, config: { ...hDefaults.ctx.config, limits: undefined } };
    // 60 plans a minute would be slow to submit here: they are written as committed rows.
    await base.database.rows(sqlInsertRecent(hDefaults.agent.id, 60, hDefaults.clock.now()));
    const err = await refusal(submitPlan(ctx, { agent: hDefaults.agent, request: mergeRequest() }));
    expect(err.message).toContain("submitted 60 plans in the last minute; limits.plansPerMinute is 60");
  });
});

function sqlCount(agentId: string) {
  return sql`SELECT count(*)::int AS n FROM plans WHERE agent_id = ${agentId}`;
}

/** n cancelled plans of the agent created in the second before `now` (final, so only plansPerMinute counts them). */
function sqlInsertRecent(agentId: string, n: number, now: Date) {
  return sql`INSERT INTO plans (id, agent_id, hash, document, preview, status, expires_at, request_digest, created_at, updated_at)
    SELECT gen_random_uuid(), ${agentId}, 'sha256:' || repeat('0', 64), '{}', '{}', 'cancelled', ${now.toISOString()}::timestamptz + interval '15 minutes', 'seed', ${now.toISOString()}::timestamptz - (i || ' ms')::interval, ${now.toISOString()}::timestamptz
    FROM generate_series(1, ${n}) i`;
}
