/**
 * Where intake and approval spend their database round trips: SQL statements (and transactions)
 * per plan, counted by pg_stat_statements on a private PostgreSQL cluster (the shared server
 * lacks it in shared_preload_libraries and must not be restarted). The product runs as users run
 * it (stack.ts: serve, executor, Slack emulator, fake target).
 *   node --import tsx bench/statements.ts [--product DIR] [PLANS]      (default 20 plans)
 * Background loops (outbox, sweeper, executor polls) also issue statements; their count over an
 * idle window as long as each phase is measured right after it and subtracted. The bench's own
 * probes carry a `bench-probe` comment and are left out.
 */
import os from "node:os";
import postgres from "postgres";
import { privateCluster } from "./private-cluster.ts";
import { productDir, useProduct } from "./processes.ts";
import { clickApprove, startStack, undelivered, until, type Stack } from "./stack.ts";

const args = process.argv.slice(2);
const productAt = args.indexOf("--product");
if (productAt >= 0) {
  useProduct(args[productAt + 1] ?? "");
  args.splice(productAt, 2);
}
const PLANS = Number(args[0] ?? 20);
if (!Number.isInteger(PLANS) || PLANS < 1) throw new Error(`PLANS must be a positive whole number, got '${args[0]}'`);

interface Counts {
  statements: Map<string, number>;
}

async function counts(sql: postgres.Sql, database: string): Promise<Counts> {
  const rows = await sql`
    SELECT s.query, s.calls::int AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = ${database} AND s.query NOT ILIKE '%pg_stat_statements%' AND s.query NOT LIKE '%bench-probe%'`;
  return { statements: new Map(rows.map((r) => [r.query as string, r.calls as number])) };
}

function difference(after: Counts, before: Counts): Counts {
  const statements = new Map<string, number>();
  for (const [query, calls] of after.statements) {
    const delta = calls - (before.statements.get(query) ?? 0);
    if (delta > 0) statements.set(query, delta);
  }
  return { statements };
}

const total = (c: Counts) => [...c.statements.values()].reduce((a, b) => a + b, 0);
// pg_stat_database.xact_commit lags (backends flush their counters up to seconds later), so
// transactions are counted as the BEGINs pg_stat_statements saw; statements outside one are their own.
const begins = (c: Counts) => [...c.statements].filter(([q]) => /^\s*begin\b/i.test(q)).reduce((a, [, n]) => a + n, 0);

/** Counts what `work` adds, less what the idle background adds over the same time. */
async function measure(admin: postgres.Sql, stack: Stack, label: string, work: () => Promise<void>): Promise<void> {
  const before = await counts(admin, stack.database);
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const during = difference(await counts(admin, stack.database), before);
  const idleBefore = await counts(admin, stack.database);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const idle = difference(await counts(admin, stack.database), idleBefore);
  const perPlan = (n: number, idleN: number) => ((n - idleN) / PLANS).toFixed(1);
  console.log(
    `${label}: ${perPlan(total(during), total(idle))} statements, ${perPlan(begins(during), begins(idle))} of them BEGIN, per plan (${PLANS} plans in ${seconds.toFixed(1)} s; the idle background's ${total(idle)} statements over as long subtracted)`,
  );
  const top = [...during.statements]
    .map(([q, n]) => [q, n - (idle.statements.get(q) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  for (const [query, n] of top.slice(0, 25)) console.log(`  ${(n / PLANS).toFixed(2).padStart(6)}  ${query.replace(/\s+/g, " ").slice(0, 150)}`);
}

const cluster = await privateCluster();
const admin = postgres(cluster.url, { onnotice: () => {}, max: 1 });
let stack: Stack | undefined;
try {
  await admin`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
  stack = await startStack({ adminUrl: cluster.url, contacts: PLANS });
  console.log(`# ${new Date().toISOString()}  product ${productDir()}  load average ${os.loadavg()[0]!.toFixed(1)}`);
  const s = stack;
  await s.submit(1); // warm-up: first-use statements (prepared, cached) do not count
  await until("the warm-up's Slack post", async () => (await undelivered(s.sql)) === 0);
  const plans: { id: string; hash: string }[] = [];
  const quiet = () => until("the outbox to be delivered", async () => (await undelivered(s.sql)) === 0, 600_000);
  await measure(admin, s, "intake (POST /v1/plans, one at a time)", async () => {
    for (let i = 1; i <= PLANS; i++) plans.push(await s.submit(i));
  });
  await measure(admin, s, "review posts delivered (outbox → Slack, 1/s per channel)", quiet);
  await measure(admin, s, "approve click → applied (decide, claim, report)", async () => {
    for (const plan of plans) {
      if ((await clickApprove(s, plan)) !== 200) throw new Error("an Approve click was refused");
      await until(
        `plan ${plan.id} applied`,
        async () => (await s.sql`SELECT status /* bench-probe */ FROM plans WHERE id = ${plan.id}`)[0]?.status === "applied",
        120_000,
        20,
      );
    }
  });
  await measure(admin, s, "Slack updates and thread replies delivered", quiet);
} finally {
  await stack?.stop();
  await admin.end({ timeout: 5 });
  await cluster.destroy();
}
