import { Writable } from "node:stream";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logging/logger.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { countIfRefusal, SECONDS_BUCKETS } from "../../../src/service/operations/metrics.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { createApp } from "../../../src/server/app.ts";
import { latestMigration, migrationState } from "../../../src/store/migration-state.ts";
import { pglite } from "../../support/databases.ts";
import { useSealingPostgres } from "../../support/sealing-postgres.ts";
import { mergeRequest } from "../../support/harness.ts";
import { sealAll } from "../../support/seal-all.ts";
import { useHarness } from "../../support/use-harness.ts";

const METRICS_TOKEN = "metrics-token-0123456789";

/** Prometheus text as `name{labels}` → value (labels as printed, sorted by prom-client's order). */
function parseMetrics(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}

/** Cumulative histogram counts of `seconds` at each bound, as Prometheus means `le`. */
const cumulative = (seconds: number[]) => SECONDS_BUCKETS.map((le) => seconds.filter((s) => s <= le).length);

/** Seals wait for the whole server's oldest transaction: PostgreSQL on a private cluster (see sealing-postgres.ts). */
const sealingPostgres = useSealingPostgres();
const databaseKinds = sealingPostgres ? [pglite, sealingPostgres] : [pglite];

describe.each(databaseKinds)("GET /metrics, /readyz and request ids on $name", (kind) => {
  /** Every plan event also queues a row in the "test" sink's lane, which nothing delivers: a backlog. */
  const h = useHarness(kind, { sinks: ["test"] });
  let key: string;
  let app: ReturnType<typeof createApp>;
  let seq = 0;

  beforeAll(async () => {
    key = (await addAgent(h.ctx, { name: "metrics-http" })).key;
    app = createApp(h.ctx, { metricsToken: METRICS_TOKEN });
  });

  const submit = async (ttlSeconds?: number): Promise<PlanView> =>
    (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `metrics plan ${++seq}`, ...(ttlSeconds ? { ttlSeconds } : {}) }) })).plan;
  const decideAs = (plan: PlanView, verdict: "approve" | "reject", via: "web" | "slack") =>
    decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via }, verdict, ...(verdict === "reject" ? { reason: "no" } : {}) });
  const scrape = async () => {
    const res = await app.request("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseMetrics(await res.text());
  };
  const count = async (query: ReturnType<typeof sql>) => Number((await h.database.rows<{ n: string | number }>(query))[0]!.n);

  /** Everything the scrape says, recomputed from plans and decisions (not from the audit log the metrics read). */
  async function expectScrapeMatchesDatabase(m: Map<string, number>): Promise<void> {
    const byStatus = await h.database.rows<{ status: string; n: string | number }>(
      sql`SELECT status::text AS status, count(*) AS n FROM plans GROUP BY status`,
    );
    for (const { status, n } of byStatus) {
      if (status === "pending" || status === "approved" || status === "executing") continue;
      expect(m.get(`countersign_plans_total{status="${status}"}`), status).toBe(Number(n));
    }
    expect(m.get('countersign_plans_total{status="pending"}')).toBe(await count(sql`SELECT count(*) AS n FROM plans`));
    // Every approved plan carries a grant; every claim counts in plans.claims.
    expect(m.get('countersign_plans_total{status="approved"}') ?? 0).toBe(await count(sql`SELECT count(*) AS n FROM plans WHERE "grant" IS NOT NULL`));
    expect(m.get('countersign_plans_total{status="executing"}') ?? 0).toBe(await count(sql`SELECT coalesce(sum(claims), 0) AS n FROM plans`));
    expect(m.get("countersign_pending_plans")).toBe(await count(sql`SELECT count(*) AS n FROM plans WHERE status = 'pending'`));

    const votes = await h.database.rows<{ verdict: string; via: string; n: string | number }>(
      sql`SELECT verdict::text AS verdict, via::text AS via, count(*) AS n FROM decisions GROUP BY 1, 2`,
    );
    expect(votes.length).toBeGreaterThan(0);
    for (const v of votes) expect(m.get(`countersign_decisions_total{verdict="${v.verdict}",via="${v.via}"}`), `${v.verdict} ${v.via}`).toBe(Number(v.n));

    // Submission → the decision that ended the review (quorum 1: the plan's one deciding vote).
    const toDecision = (
      await h.database.rows<{ s: string | number }>(sql`
      SELECT extract(epoch FROM d.decided_at - p.created_at) AS s FROM plans p JOIN decisions d ON d.plan_id = p.id
      WHERE p.grant IS NOT NULL OR p.status = 'rejected'`)
    ).map((r) => Number(r.s));
    expect(toDecision.length).toBeGreaterThan(0);
    cumulative(toDecision).forEach((n, i) => {
      expect(m.get(`countersign_time_to_decision_seconds_bucket{le="${SECONDS_BUCKETS[i]}"}`), `le ${SECONDS_BUCKETS[i]}`).toBe(n);
    });
    expect(m.get('countersign_time_to_decision_seconds_bucket{le="+Inf"}')).toBe(toDecision.length);
    expect(m.get("countersign_time_to_decision_seconds_count")).toBe(toDecision.length);
    expect(m.get("countersign_time_to_decision_seconds_sum")).toBeCloseTo(
      toDecision.reduce((a, b) => a + b, 0),
      3,
    );

    const applySeconds = (
      await h.database.rows<{ s: string | number }>(sql`
      SELECT extract(epoch FROM p.updated_at - d.decided_at) AS s FROM plans p JOIN decisions d ON d.plan_id = p.id WHERE p.status = 'applied'`)
    ).map((r) => Number(r.s));
    cumulative(applySeconds).forEach((n, i) => {
      expect(m.get(`countersign_apply_seconds_bucket{le="${SECONDS_BUCKETS[i]}"}`)).toBe(n);
    });
    expect(m.get("countersign_apply_seconds_count")).toBe(applySeconds.length);

    expect(m.get('countersign_expired_total{from="pending"}') ?? 0).toBe(
      await count(sql`SELECT count(*) AS n FROM plans WHERE status = 'expired' AND "grant" IS NULL`),
    );
    expect(m.get('countersign_expired_total{from="approved"}') ?? 0).toBe(
      await count(sql`SELECT count(*) AS n FROM plans WHERE status = 'expired' AND "grant" IS NOT NULL AND claims = 0`),
    );

    const lanes = await h.database.rows<{ lane: string; n: string | number }>(
      sql`SELECT lane, count(*) AS n FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL GROUP BY lane`,
    );
    expect(lanes.length).toBeGreaterThan(0);
    for (const l of lanes) expect(m.get(`countersign_outbox_backlog{lane="${l.lane}"}`), l.lane).toBe(Number(l.n));
  }

  /** Half a working day of plans on the injected clock: approved and applied, rejected, expired unattended and after approval, cancelled, left pending. */
  async function scriptedHours(): Promise<void> {
    const applied = await submit();
    h.clock.advance(95);
    await decideAs(applied, "approve", "web");
    const claim = await claimApproved(h.ctx);
    h.clock.advance(40);
    await reportOutcome(h.ctx, {
      claimToken: claim!.claimToken,
      outcome: { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied", detail: "ok" }] },
    });

    const rejected = await submit();
    h.clock.advance(60); // exactly on a bound: le="60" counts it
    await decideAs(rejected, "reject", "slack");

    const unattended = await submit(300);
    const cancelled = await submit();
    await cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id });
    const approvedLate = await submit(3600);
    h.clock.advance(1900);
    await decideAs(approvedLate, "approve", "slack");
    expect(await expireDue(h.ctx)).toContain(unattended.id); // with the plan the previous hours left pending
    h.clock.advance(3600); // the grant (600 s) runs out unclaimed
    expect(await expireDue(h.ctx)).toEqual([approvedLate.id]);
    await submit(); // still pending at the scrape
    h.clock.advance(2 * 3600);
  }

  it("a scripted day on the injected clock, scraped twice (before and after a rollup up to a seal), agrees with the database", async () => {
    // Refusals leave no row of their own: two unauthenticated submissions, one unknown plan.
    for (let i = 0; i < 2; i++) expect((await app.request("/v1/plans", { method: "POST", body: "{}" })).status).toBe(401);
    expect((await app.request("/v1/plans/00000000-0000-4000-8000-000000000000", { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);

    await scriptedHours();
    const first = await scrape();
    await expectScrapeMatchesDatabase(first);
    expect(first.get('countersign_refusals_total{code="unauthorized"}')).toBe(2);
    expect(first.get('countersign_refusals_total{code="not_found"}')).toBe(1);

    // Seal everything, so the next scrape sums it into metrics_rollup; then more of the day.
    await sealAll(h.ctx);
    const rolled = await scrape();
    expect(rolled).toEqual(first);
    const [state] = await h.database.rows<{ through: string; latest: string }>(sql`
      SELECT s.through_xid::text AS through, (SELECT xid_to::text FROM audit_seals ORDER BY seq DESC LIMIT 1) AS latest FROM metrics_rollup_state s`);
    expect(state!.through).toBe(state!.latest);
    expect(await count(sql`SELECT count(*) AS n FROM metrics_rollup`)).toBeGreaterThan(0);

    await scriptedHours();
    const second = await scrape();
    await expectScrapeMatchesDatabase(second);
    expect(second.get('countersign_plans_total{status="applied"}')).toBe(2);
    expect(second.get('countersign_expired_total{from="pending"}')).toBe(3);
    expect(second.get('countersign_decisions_total{verdict="reject",via="slack"}')).toBe(2);
    await sealAll(h.ctx);
    expect(await scrape()).toEqual(second);
  });

  it("counts the refusals the Slack and browser doors answer themselves, and nothing else they catch", async () => {
    const before = (await scrape()).get('countersign_refusals_total{code="not_an_approver"}') ?? 0;
    await countIfRefusal(h.ctx, new ServiceError("not_an_approver", "not you"));
    await countIfRefusal(h.ctx, new Error("a fault, not a refusal"));
    const after = await scrape();
    expect(after.get('countersign_refusals_total{code="not_an_approver"}')).toBe(before + 1);
    expect(
      [...after.keys()].filter((k) => k.startsWith("countersign_refusals_total")).every((k) => /code="(unauthorized|not_found|not_an_approver)"/.test(k)),
    ).toBe(true);
  });

  it("refuses a scrape without the metrics token, or with another, in constant time (401)", async () => {
    expect((await app.request("/metrics")).status).toBe(401);
    expect((await app.request("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}x` } })).status).toBe(401);
    const open = await createApp(h.ctx).request("/metrics");
    expect(open.status).toBe(200);
    expect(await open.text()).toContain("# TYPE countersign_time_to_decision_seconds histogram");
  });

  it("/readyz is 200 on a migrated database and 503 naming a missing migration", async () => {
    const res = await app.request("/readyz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, migration: latestMigration().tag });
    expect(await migrationState(h.database, { tag: "9999_from_the_future", when: Number.MAX_SAFE_INTEGER })).toEqual({
      ready: false,
      reason: expect.stringMatching(/lacks migration 9999_from_the_future/),
    });
  });

  it("/readyz is 503 on a database nobody migrated, while /healthz stays 200", async () => {
    const check = async (database: typeof h.database) => {
      const unmigrated = createApp({ ...h.ctx, database });
      const res = await unmigrated.request("/readyz");
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ ok: false, reason: expect.stringMatching(/not migrated .*countersign migrate/) });
      expect((await unmigrated.request("/healthz")).status).toBe(200);
    };
    if (sealingPostgres && kind === sealingPostgres) {
      const bare = await sealingPostgres.openUnmigrated();
      try {
        await check(bare);
      } finally {
        await bare.close();
      }
    } else {
      // A fresh PGlite takes 5-25 s to start: its migration record is hidden from this one instead.
      await h.database.rows(sql`ALTER SCHEMA drizzle RENAME TO drizzle_hidden`);
      try {
        await check(h.database);
      } finally {
        await h.database.rows(sql`ALTER SCHEMA drizzle_hidden RENAME TO drizzle`);
      }
      expect((await app.request("/readyz")).status).toBe(200);
    }
  });

  it("answers X-Request-Id (a sane incoming one kept, anything else replaced) and logs it on the request's line", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(
          ...String(chunk)
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        );
        done();
      },
    });
    const logged = createApp({ ...h.ctx, logger: createLogger("info", sink) });
    const kept = await logged.request("/v1/plans", { headers: { "x-request-id": "edge-7f3a.42" } });
    expect(kept.headers.get("x-request-id")).toBe("edge-7f3a.42");
    const replaced = await logged.request("/healthz", { headers: { "x-request-id": "no spaces\tor tabs" } });
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const none = await logged.request("/v1/nowhere");
    const generated = none.headers.get("x-request-id");
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect(generated).not.toBe(replaced.headers.get("x-request-id"));
    expect(lines).toContainEqual(expect.objectContaining({ msg: "request", requestId: "edge-7f3a.42", method: "GET", path: "/v1/plans", status: 401 }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: "request", requestId: generated, path: "/v1/nowhere", status: 404 }));
  });
});
