/**
 * What pruning purged plans' audit events costs the purge (issue 16). Makes a database on
 * TEST_DATABASE_URL's server (or BENCH_DATABASE_URL's), ends PLANS plans through the service (a
 * second apart on the test clock; each one submitted and cancelled, every fourth one rejected by a
 * person instead), seals and rolls up, then purges them in batches of BATCH plans, alternating
 * countersign_purge_plans() (deletes the events behind the checkpoint) with KEEPING_EVENTS (a
 * purge that keeps them), and prints per batch in ms: the median of each and their ratio; then
 * plain verifyAudit over the half-pruned log. Seals stop below the server's xmin: run it where no
 * long transaction is open.
 * Run: node --import tsx bench/retention-prune.ts [PLANS] [BATCH]   (1000, 50)
 */
import { sql } from "drizzle-orm";
import { cancelPlan } from "../src/service/intake/cancel-plan.ts";
import { decide } from "../src/service/decide/decide.ts";
import { rollUpMetrics } from "../src/service/operations/metrics.ts";
import { submitPlan } from "../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../src/service/audit/verify-audit.ts";
import { openThrowawayPostgres } from "../test/support/throwaway-postgres.ts";
import { mergeRequest, openHarness } from "../test/support/harness.ts";
import { sealAll } from "../test/support/seal-all.ts";

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (!adminUrl) throw new Error("set TEST_DATABASE_URL or BENCH_DATABASE_URL to a server this bench may create a database on");
const [plans = 1000, batch = 50] = process.argv
  .slice(2)
  .filter((a) => /^\d+$/.test(a))
  .map(Number);
/** The purge without pruning: final plans with their decisions, Slack refs, reminders and outbox rows; audit events kept. */
const KEEPING_EVENTS = `
CREATE FUNCTION bench_purge_keeping_events(purge_before timestamptz, purge_reason text) RETURNS integer
  SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  doomed uuid[];
  n_plans integer;
  n_decisions integer;
  n_outbox integer;
BEGIN
  IF purge_before IS NULL OR purge_before > now() THEN
    RAISE EXCEPTION 'countersign_purge_plans: the cutoff must be a moment in the past, got %', coalesce(purge_before::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF purge_reason IS NULL OR btrim(purge_reason) = '' THEN
    RAISE EXCEPTION 'countersign_purge_plans: a reason is required (it is kept in purges)' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Final statuses named, not "not open": a status added later is kept until it is listed here.
  SELECT coalesce(array_agg(id), '{}') INTO doomed FROM (
    SELECT id FROM plans
     WHERE status IN ('rejected', 'expired', 'cancelled', 'applied', 'failed', 'stale', 'superseded', 'revoked')
       AND status NOT IN ('pending', 'approved', 'executing') AND updated_at < purge_before
       FOR UPDATE
  ) AS final_plans;
  PERFORM set_config('countersign.purge', 'on', true);
  DELETE FROM decisions WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_decisions = ROW_COUNT;
  DELETE FROM slack_messages WHERE plan_id = ANY (doomed);
  DELETE FROM plan_reminders WHERE plan_id = ANY (doomed);
  DELETE FROM outbox WHERE plan_id = ANY (doomed);
  GET DIAGNOSTICS n_outbox = ROW_COUNT;
  DELETE FROM plans WHERE id = ANY (doomed);
  GET DIAGNOSTICS n_plans = ROW_COUNT;
  PERFORM set_config('countersign.purge', 'off', true);
  INSERT INTO purges (by_role, reason, before, plans, decisions, outbox)
  VALUES (session_user, purge_reason, purge_before, n_plans, n_decisions, n_outbox);
  RETURN n_plans;
END;
$$ LANGUAGE plpgsql;`;

const database = await openThrowawayPostgres(adminUrl, { prefix: "countersign_bench_prune" }); // dropped at close
const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  await database.migrate();
  await database.db.execute(sql.raw(KEEPING_EVENTS));
  const h = await openHarness(database); // its agent limits are far above a plan a second
  const seeded = process.hrtime.bigint();
  for (let i = 0; i < plans; i++) {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `bench ${i}` }) });
    if (i % 4 === 3) await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "bench" });
    else await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
    h.clock.advance(1);
  }
  console.log(`seeded ${plans} ended plans in ${(ms(seeded) / 1000).toFixed(1)} s`);
  await sealAll(h.ctx);
  await rollUpMetrics(h.ctx, { maxSteps: 100 });
  const edges = (await database.rows<{ updated_at: Date | string }>(sql`SELECT updated_at FROM plans ORDER BY updated_at`)).map((r) => new Date(r.updated_at));
  const timings = { prune: [] as number[], keep: [] as number[] };
  for (let b = 0, k = 0; b < edges.length; b += batch, k++) {
    const cutoff = new Date(edges[Math.min(b + batch, edges.length) - 1]!.getTime() + 1).toISOString();
    const fn = k % 2 === 0 ? "countersign_purge_plans" : "bench_purge_keeping_events";
    const t = process.hrtime.bigint();
    const [row] = await database.rows<{ n: number }>(sql`SELECT ${sql.raw(fn)}(${cutoff}::timestamptz, 'bench') AS n`);
    (k % 2 === 0 ? timings.prune : timings.keep).push(ms(t));
    if (Number(row!.n) === 0) throw new Error(`${fn} took no plan at cutoff ${cutoff}`);
  }
  const [pruned] = await database.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM audit_pruned`);
  const p = median(timings.prune);
  const q = median(timings.keep);
  console.log(
    `purge of ${batch} plans: pruning events ${p.toFixed(1)} ms (median of ${timings.prune.length}), keeping them ${q.toFixed(1)} ms (${timings.keep.length}), ratio ${(p / q).toFixed(2)}; ${pruned!.n} events pruned`,
  );
  const t = process.hrtime.bigint();
  const verdict = await verifyAudit(h.ctx);
  console.log(`verifyAudit: ${ms(t).toFixed(0)} ms, ok ${verdict.ok}, ${verdict.events} events, ${verdict.pruned} pruned lines`);
  await h.close();
} finally {
  await database.close();
}
