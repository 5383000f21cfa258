/**
 * What pruning purged plans' audit events costs the purge. Makes a database on
 * TEST_DATABASE_URL's server (or BENCH_DATABASE_URL's), ends PLANS plans through the service (a
 * second apart on the test clock; each one submitted and cancelled, every fourth one rejected by a
 * person instead), seals and rolls up, then purges them in batches of BATCH plans, alternating
 * countersign_purge_plans() (deletes the events behind the checkpoint) with the same purge minus
 * its event-pruning statement, and prints per batch in ms: the median of each and their ratio;
 * then plain verifyAudit over the half-pruned log. Seals stop below the server's xmin: run it
 * where no long transaction is open.
 * Run: node --import tsx bench/retention-prune.ts [PLANS] [BATCH]   (1000, 50)
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { cancelPlan } from "../src/service/intake/cancel-plan.ts";
import { decide } from "../src/service/decide/decide.ts";
import { MIGRATIONS_FOLDER } from "../src/store/db.ts";
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
const GUARDS = path.join(MIGRATIONS_FOLDER, "0001_guards.sql");
/**
 * The purge that keeps audit events: countersign_purge_plans() as migrations/0001_guards.sql
 * defines it, renamed, with the statement that moves the doomed plans' events into audit_pruned
 * replaced by a zero count. Taken from the file, so the two purges differ only in that statement;
 * throws when the file lacks the text this cuts.
 */
function purgeKeepingEvents(guards: string): string {
  const create = "CREATE FUNCTION countersign_purge_plans(";
  const start = guards.indexOf(create);
  const bodyOpen = start < 0 ? -1 : guards.indexOf("$$", start);
  const bodyClose = bodyOpen < 0 ? -1 : guards.indexOf("$$", bodyOpen + 2);
  const end = bodyClose < 0 ? -1 : guards.indexOf(";", bodyClose);
  if (end < 0) throw new Error(`${GUARDS}: no ${create}… $$ … $$ …; block found`);
  const purge = guards.slice(start, end + 1);
  const pruning = /WITH gone AS \(\s*DELETE FROM public\.audit_events\b[\s\S]*?GET DIAGNOSTICS n_events = ROW_COUNT;/g;
  const found = purge.match(pruning) ?? [];
  if (found.length !== 1)
    throw new Error(
      `${GUARDS}: countersign_purge_plans has ${found.length} event-pruning statements (WITH gone AS (DELETE FROM public.audit_events … GET DIAGNOSTICS n_events), expected 1`,
    );
  const keeping = purge.replace(create, "CREATE FUNCTION bench_purge_keeping_events(").replace(pruning, "n_events := 0;");
  if (/audit_pruned|DELETE FROM public\.audit_events/.test(keeping))
    throw new Error(`${GUARDS}: countersign_purge_plans still prunes events once its event-pruning statement is cut`);
  return keeping;
}
const KEEPING_EVENTS = purgeKeepingEvents(readFileSync(GUARDS, "utf8"));

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
