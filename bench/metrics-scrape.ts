/**
 * What a /metrics scrape costs at volume. Makes a database on TEST_DATABASE_URL's
 * server (or BENCH_DATABASE_URL's), migrates it, seeds PLANS plans with bench/scans/seed.sql
 * (4 M delivered outbox rows at 1 M, 1 000 undelivered in 10 lanes) and their audit events with
 * bench/scans/metrics-seed.sql (~5 M at 1 M), and seals them (one seal row written here: the
 * sealer's own hashing is not what is measured). Then prints, in ms:
 *   - the first rollup (every event summed once: what each scrape would cost without it),
 *   - scrapes with nothing new since the seal, and with 1 000 events committed since,
 *   - the lane gauges' share (laneHealth) and the retention sweep with nothing due.
 * With --explain, also the scrape statement's EXPLAIN ANALYZE with 1 000 events since the seal.
 * Run: node --import tsx bench/metrics-scrape.ts [PLANS] [--keep] [--explain]   (PLANS default 1000000)
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { openDatabase } from "../src/store/db.ts";
import { metricsStatement, readMetrics, rollUpMetrics } from "../src/service/operations/metrics.ts";
import { laneHealth } from "../src/service/delivery/lane-health.ts";
import { sweepRetention } from "../src/service/operations/retention.ts";

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (!adminUrl) throw new Error("set TEST_DATABASE_URL or BENCH_DATABASE_URL to a server this bench may create a database on");
const plans = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const keep = process.argv.includes("--keep");
const explain = process.argv.includes("--explain");

const admin = postgres(adminUrl, { onnotice: () => {}, max: 1 });
const name = `countersign_bench_metrics_${randomBytes(4).toString("hex")}`;
await admin.unsafe(`CREATE DATABASE ${name}`);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const database = await openDatabase({ kind: "postgres", url: url.toString() });
const ctx = { database, clock: () => new Date(), logger: pino({ level: "silent" }) };

const time = async <T>(what: () => Promise<T>): Promise<number> => {
  const started = performance.now();
  await what();
  return performance.now() - started;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = () => execFileSync("cat", ["/proc/loadavg"]).toString().split(" ")[0];

try {
  await database.migrate();
  const seeded = performance.now();
  for (const file of ["bench/scans/seed.sql", "bench/scans/metrics-seed.sql"]) {
    execFileSync("psql", ["-q", "-v", "ON_ERROR_STOP=1", "-v", `plans=${plans}`, "-f", file, url.toString()], { stdio: ["ignore", "ignore", "inherit"] });
  }
  await database.rows(sql`
    INSERT INTO audit_seals (seq, prev_hash, xid_from, xid_to, events, events_total, hash, sealed_at)
    SELECT coalesce(max(seq), 0) + 1, 'bench', '1'::xid8, pg_current_xact_id(), (SELECT count(*) FROM audit_events), (SELECT count(*) FROM audit_events), 'bench', now() FROM audit_seals`);
  const [{ events }] = (await database.rows<{ events: string }>(sql`SELECT count(*) AS events FROM audit_events`)) as [{ events: string }];
  console.log(`seeded ${plans} plans, ${events} audit events in ${((performance.now() - seeded) / 1000).toFixed(0)} s (load ${load()})`);

  console.log(`first rollup (all events, once): ${(await time(() => rollUpMetrics(ctx))).toFixed(0)} ms`);
  const steady: number[] = [];
  for (let i = 0; i < 5; i++) steady.push(await time(() => readMetrics(ctx)));
  console.log(`scrape, nothing since the seal: median ${median(steady).toFixed(1)} ms [${steady.map((t) => t.toFixed(1)).join(", ")}]`);

  // 1 000 events committed since the seal (200 plans' worth), which every scrape reads until the next one.
  await database.rows(sql`
    INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash)
    SELECT p.id, 'plan.reminder', '{"type":"system","process":"reminders"}', '{}', now(), md5(random()::text), md5(random()::text)
    FROM (SELECT id FROM plans LIMIT 1000) p`);
  await database.rows(sql`ANALYZE audit_events`);
  const tail: number[] = [];
  for (let i = 0; i < 5; i++) tail.push(await time(() => readMetrics(ctx)));
  console.log(`scrape, 1 000 events since the seal: median ${median(tail).toFixed(1)} ms [${tail.map((t) => t.toFixed(1)).join(", ")}]`);
  if (explain) {
    const plan = await database.rows<{ "QUERY PLAN": string }>(sql`EXPLAIN (ANALYZE, BUFFERS) ${metricsStatement()}`);
    console.log(plan.map((r) => r["QUERY PLAN"]).join("\n"));
  }
  const lanes: number[] = [];
  for (let i = 0; i < 5; i++) lanes.push(await time(() => laneHealth(ctx)));
  console.log(`of which laneHealth: median ${median(lanes).toFixed(1)} ms`);
  const sweep: number[] = [];
  const policy = { days: 36_500, plans: true };
  for (let i = 0; i < 5; i++) sweep.push(await time(() => sweepRetention(ctx, { policy })));
  console.log(
    `retention sweep, nothing due (plans: true): median ${median(sweep).toFixed(1)} ms [${sweep.map((t) => t.toFixed(1)).join(", ")}] (load ${load()})`,
  );
} finally {
  await database.close();
  if (keep) console.log(`kept database ${name}`);
  else await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end({ timeout: 5 });
}
