import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { consumeLoginLink, createLoginLink, endSession } from "../../../src/service/sign-in/login-links.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { readMetrics } from "../../../src/service/operations/metrics.ts";
import { sweepRetention, type RetentionSwept } from "../../../src/service/operations/retention.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { pglite } from "../../support/databases.ts";
import { useSealingPostgres } from "../../support/sealing-postgres.ts";
import { mergeRequest } from "../../support/harness.ts";
import { sealAll } from "../../support/seal-all.ts";
import { useHarness } from "../../support/use-harness.ts";

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

/** Seals wait for the whole server's oldest transaction: PostgreSQL on a private cluster (see sealing-postgres.ts). */
const sealingPostgres = useSealingPostgres();
const databaseKinds = sealingPostgres ? [pglite, sealingPostgres] : [pglite];

describe.each(databaseKinds)("retention sweep on $name", (kind) => {
  /** Every plan event queues a row in the "test" sink's lane: outbox rows to deliver (by hand here) and keep or delete. */
  const h = useHarness(kind, { sinks: ["test"] });
  let seq = 0;

  const submit = async (): Promise<PlanView> => (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `retention plan ${++seq}` }) })).plan;
  const count = async (query: ReturnType<typeof sql>) => Number((await h.database.rows<{ n: string | number }>(query))[0]!.n);
  const ids = (plans: PlanView[]) => sql.raw(`ARRAY[${plans.map((p) => `'${p.id}'`).join(",")}]::uuid[]`);

  it("deletes old delivered outbox rows, ended sessions, used and expired links, and with plans: true old final plans with their audit events, in batches; keeps open plans, the audit log verifies", async () => {
    // Day 0: five plans that end (a second apart, so batches split them), one rejected by a person, two left open.
    const ended: PlanView[] = [];
    for (let i = 0; i < 5; i++) {
      const plan = await submit();
      await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
      ended.push(plan);
      h.clock.advance(1);
    }
    const rejected = await submit();
    await decide(h.ctx, { planId: rejected.id, hash: rejected.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "not today" });
    ended.push(rejected);
    const pending = await submit();
    h.clock.advance(1); // the list below is in submission order: no two plans at the same instant
    const approved = await submit();
    await decide(h.ctx, { planId: approved.id, hash: approved.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    // Every row so far is delivered now, except each plan's last one.
    await h.database.rows(
      sql`UPDATE outbox SET delivered_at = ${h.clock.now().toISOString()}::timestamptz WHERE id NOT IN (SELECT max(id) FROM outbox GROUP BY plan_id)`,
    );
    const used = await createLoginLink(h.ctx, { userId: "U0ALICE", via: "cli" });
    const { sessionId } = await consumeLoginLink(h.ctx, { token: tokenOf(used.url) });
    await endSession(h.ctx, { sessionId });
    await createLoginLink(h.ctx, { userId: "U0BOB", via: "cli" }); // never used; expires

    // Two days later: a plan ends today, a session and a link are fresh, a row was delivered today.
    h.clock.advance(2 * 86_400);
    const today = await submit();
    await cancelPlan(h.ctx, { agent: h.agent, planId: today.id });
    await h.database.rows(sql`UPDATE outbox SET delivered_at = ${h.clock.now().toISOString()}::timestamptz WHERE plan_id = ${today.id}`);
    const fresh = await createLoginLink(h.ctx, { userId: "U0CAROL", via: "cli" });
    await consumeLoginLink(h.ctx, { token: tokenOf(fresh.url) });
    await createLoginLink(h.ctx, { userId: "U0DAVE", via: "cli" });

    const oldDelivered = await count(sql`SELECT count(*) AS n FROM outbox WHERE delivered_at < ${h.clock.now().toISOString()}::timestamptz - interval '1 day'`);
    // Undelivered rows stay, but those of a purged plan go with it.
    const undeliveredOfOthers = sql`SELECT count(*) AS n FROM outbox WHERE delivered_at IS NULL AND NOT plan_id = ANY (${ids(ended)})`;
    const undelivered = await count(undeliveredOfOthers);
    expect(undelivered).toBeGreaterThan(0);
    const auditOfEnded = sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ANY (${ids(ended)})`;
    const endedEvents = await count(auditOfEnded);
    expect(oldDelivered).toBeGreaterThan(4);
    expect(await count(sql`SELECT count(*) AS n FROM decisions WHERE plan_id = ANY (${ids(ended)})`)).toBe(1);

    // Without plans: true no plan goes, whatever its age.
    const first = await sweepRetention(h.ctx, { policy: { days: 1, plans: false }, batch: 2, maxBatches: 1 });
    expect(first).toEqual({ outbox: 2, sessions: 1, loginLinks: 2, plans: 0 });
    expect(await count(sql`SELECT count(*) AS n FROM plans`)).toBe(9);

    // With plans: true, pass after pass of one batch of two each.
    const purgesBefore = await count(sql`SELECT count(*) AS n FROM purges`);
    const metricsBefore = await readMetrics(h.ctx);
    const passes: RetentionSwept[] = [];
    for (let i = 0; i < 10; i++) {
      const swept = await sweepRetention(h.ctx, { policy: { days: 1, plans: true }, batch: 2, maxBatches: 1 });
      if (swept.outbox + swept.sessions + swept.loginLinks + swept.plans === 0) break;
      passes.push(swept);
    }
    expect(passes.map((p) => p.plans)).toEqual([2, 2, 2]);
    expect(passes.every((p) => p.outbox <= 2)).toBe(true);
    // One purges record per batch, and none for a pass with nothing to purge.
    expect(await count(sql`SELECT count(*) AS n FROM purges`)).toBe(purgesBefore + 3);

    expect(await count(sql`SELECT count(*) AS n FROM plans WHERE id = ANY (${ids(ended)})`)).toBe(0);
    expect(await count(sql`SELECT count(*) AS n FROM decisions WHERE plan_id = ANY (${ids(ended)})`)).toBe(0);
    const left = await h.database.rows<{ id: string; status: string }>(sql`SELECT id, status::text AS status FROM plans ORDER BY created_at`);
    expect(left).toEqual([
      { id: pending.id, status: "pending" },
      { id: approved.id, status: "approved" },
      { id: today.id, status: "cancelled" },
    ]);
    // Their audit events went too (the sweep sealed and rolled them up first), each leaving its line in the checkpoint.
    expect(await count(auditOfEnded)).toBe(0);
    expect(await count(sql`SELECT count(*) AS n FROM audit_pruned WHERE plan_id = ANY (${ids(ended)})`)).toBe(endedEvents);
    expect(await count(sql`SELECT sum(audit_events) AS n FROM purges`)).toBe(endedEvents);
    expect(await count(sql`SELECT count(*) AS n FROM outbox WHERE delivered_at < ${h.clock.now().toISOString()}::timestamptz - interval '1 day'`)).toBe(0);
    expect(await count(undeliveredOfOthers)).toBe(undelivered);
    expect(await count(sql`SELECT count(*) AS n FROM outbox WHERE plan_id = ANY (${ids(ended)})`)).toBe(0);
    expect(await count(sql`SELECT count(*) AS n FROM outbox WHERE plan_id = ${today.id}`)).toBeGreaterThan(0);
    expect(await count(sql`SELECT count(*) AS n FROM web_sessions`)).toBe(1);
    expect(await h.database.rows(sql`SELECT user_id FROM login_links ORDER BY user_id`)).toEqual([{ user_id: "U0CAROL" }, { user_id: "U0DAVE" }]);

    // The metrics count from the audit log, rolled up before a purge may prune it: a purge takes nothing from them.
    const metricsAfter = await readMetrics(h.ctx);
    expect(metricsAfter.plansTotal).toEqual(metricsBefore.plansTotal);
    expect(metricsAfter.decisionsTotal).toEqual(metricsBefore.decisionsTotal);
    expect(metricsAfter.plansTotal).toContainEqual({ status: "cancelled", count: 6 });

    await sealAll(h.ctx);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problems).toEqual([]);
    expect(verdict).toMatchObject({ ok: true, pruned: endedEvents });
  });
});
