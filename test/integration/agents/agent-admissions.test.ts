import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { LimitsConfig } from "../../../src/config/schema.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds, postgresKind } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";

/*
 * The bound on an agent's counts: agent_admissions holds how many plans each
 * agent has ever stored, kept by the plans INSERT trigger; far from the limits the usage read and
 * the guard go by it instead of counting. The limits themselves are pinned by agent-limits.test.ts.
 */

function limited(h: { ctx: ServiceContext }, limits: Partial<LimitsConfig>): ServiceContext {
  return { ...h.ctx, config: { ...h.ctx.config, limits: { plansPerMinute: 60, maxPending: 100, agents: {}, ...limits } } };
}

/** n pending plans of the agent, written directly (final rows would not show the open count). */
function insertOpen(agentId: string, n: number, now: Date) {
  return sql`INSERT INTO plans (id, agent_id, hash, document, preview, status, expires_at, request_digest, created_at, updated_at)
    SELECT gen_random_uuid(), ${agentId}, 'sha256:' || repeat('0', 64), '{}', '{}', 'pending', ${now.toISOString()}::timestamptz + interval '1 hour', 'seed', ${now.toISOString()}::timestamptz - interval '2 hours', ${now.toISOString()}::timestamptz
    FROM generate_series(1, ${n}) i`;
}

describe.each(databaseKinds)("agent admissions bound on $name", (kind) => {
  const base = useHarness(kind);
  const hCount = base.another({});
  const hCopy = base.another({});

  const admitted = async (agentId: string) =>
    await base.database.rows<{ slot: number; admitted: number }>(
      sql`SELECT slot, admitted::int AS admitted FROM agent_admissions WHERE agent_id = ${agentId} ORDER BY slot`,
    );
  const stored = async (agentId: string) =>
    Number((await base.database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM plans WHERE agent_id = ${agentId}`))[0]!.n);

  it("counts every plan an agent stores: submitted under a slot (0..7), written directly in slot 8, an idempotent retry once", async () => {
    const h = hCount;
    const ctx = limited(h, {});
    await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "one" }) });
    const request = mergeRequest({ title: "keyed", idempotencyKey: "admissions-1" });
    await submitPlan(ctx, { agent: h.agent, request });
    expect((await submitPlan(ctx, { agent: h.agent, request })).created).toBe(false);
    await base.database.rows(insertOpen(h.agent.id, 3, h.clock.now()));
    const rows = await admitted(h.agent.id);
    expect(rows.reduce((sum, r) => sum + Number(r.admitted), 0)).toBe(5);
    expect(await stored(h.agent.id)).toBe(5);
    expect(rows.find((r) => Number(r.slot) === 8)?.admitted).toBe(3);
    for (const r of rows) expect(Number(r.slot)).toBeLessThanOrEqual(8);
  });

  it("goes by the bound while it is 16 or more below both limits, without counting; plans copied with triggers off must add themselves", async () => {
    const h = hCopy;
    const ctx = limited(h, { plansPerMinute: 1000, maxPending: 40 });
    // 40 open plans copied around the trigger (as bench/seed.ts copies histories): not in the bound.
    await base.database.db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL session_replication_role = replica`);
      await tx.execute(insertOpen(h.agent.id, 40, h.clock.now()));
    });
    // The bound (0) is far from both limits: no count is made, so the 40 are not seen.
    expect((await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "by the bound" }) })).created).toBe(true);
    // Added to the bound, as such a copy must: now near, the counts are made, and they refuse.
    await base.database.rows(sql`INSERT INTO agent_admissions (agent_id, slot, admitted) VALUES (${h.agent.id}, 8, 40)
      ON CONFLICT (agent_id, slot) DO UPDATE SET admitted = agent_admissions.admitted + 40`);
    const err = await refusal(submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: "counted" }) }));
    expect(err.message).toBe(`agent ${h.agent.name} has 40 plans pending or approved; limits.maxPending is 40. Retry after 30 s.`);
  });
});

describe.skipIf(!postgresKind)("agent admissions bound under concurrency on postgres", () => {
  const base = useHarness(postgresKind!);
  /** Previews of a burst wait on one another on a loaded machine: more time than the default 5 s. */
  const h = base.another({ targets: (url) => ({ crm: targetConfig(url, { timeoutMs: 60_000 }) }) });

  it("never lets 60 submissions at once go beyond maxPending 30 as the bound crosses from far to near", async () => {
    const ctx = limited(h, { plansPerMinute: 100_000, maxPending: 30 });
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `crossing ${i}` }) })),
    );
    const accepted = results.filter((r) => r.status === "fulfilled").length;
    const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as { code?: string }] : []));
    expect(accepted).toBeLessThanOrEqual(30);
    expect(accepted).toBeGreaterThanOrEqual(12);
    expect(refused.every((e) => e.code === "rate_limited")).toBe(true);
    const [open] = await base.database.rows<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM plans WHERE agent_id = ${h.agent.id} AND status IN ('pending', 'approved')`,
    );
    expect(Number(open!.n)).toBe(accepted);
    const [bound] = await base.database.rows<{ n: number }>(sql`SELECT sum(admitted)::int AS n FROM agent_admissions WHERE agent_id = ${h.agent.id}`);
    expect(Number(bound!.n)).toBe(accepted);
  });
});
