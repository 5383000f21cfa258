/**
 * Where intake's CPU goes, process by process: CPU milliseconds per plan (user + system, from
 * /proc/<pid>/stat) of `serve`, the executor, the fake target, the product database's PostgreSQL
 * backends and this process (HTTP client and Slack emulator), over blocks of the intake figure's
 * work (8 agents, one request in flight each), then over the floor's (key read, GET, three inserts
 * in one statement), then over the process floor's (the same, POSTed to a bare node:http child,
 * bench/process-floor.ts). CPU time, unlike wall time, hardly moves with the machine's load, so a
 * change shows here when the ratio figures are too noisy to tell; and intake runs both cores
 * full, so its ratio to a floor is about the ratio of the totals (docs/notes/bench.md).
 * Linux only.
 *   node --import tsx bench/cpu-per-plan.ts [--product DIR] [--statements] [SECONDS]   (default 8 s blocks)
 * Needs BENCH_DATABASE_URL or TEST_DATABASE_URL (a fresh database is made and dropped).
 * `--statements` runs on a private cluster with pg_stat_statements (track all, so statements in
 * functions count too) and prints, after the intake blocks, the statements that took the most
 * execution time per plan, with their calls per plan, and then the floor's likewise.
 */
import { randomInt } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import { throughput } from "./blocks.ts";
import { captureTemplates, createFloorTables, floorGet, floorSubmit } from "./floor.ts";
import { startIntakeFloor, type IntakeFloor } from "./process-floor.ts";
import { privateCluster } from "./private-cluster.ts";
import { processTree, useProduct } from "./processes.ts";
import { benchDatabaseUrl, mergeBody, startStack, type Stack } from "./stack.ts";

const IN_FLIGHT = 8;
const CONTACTS = 1000;
const BLOCKS = 3;

const args = process.argv.slice(2);
const productAt = args.indexOf("--product");
if (productAt >= 0) {
  useProduct(args[productAt + 1] ?? "");
  args.splice(productAt, 2);
}
const statementsAt = args.indexOf("--statements");
if (statementsAt >= 0) args.splice(statementsAt, 1);
const SECONDS = Number(args[0] ?? 8);
if (!(SECONDS > 0)) throw new Error(`SECONDS must be a positive number, got '${args[0]}'`);
const cluster = statementsAt >= 0 ? await privateCluster("all") : undefined;
const adminUrl = cluster?.url ?? benchDatabaseUrl();
if (!adminUrl) throw new Error("set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create a database on");

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU milliseconds a process has used, in all and in the kernel (0 once it is gone). */
function cpuMs(pid: number): number {
  return cpu(pid).all;
}

function cpu(pid: number): { all: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ms = (ticks: string | undefined) => (Number(ticks) * 1000) / TICKS_PER_SECOND;
    return { all: ms(fields[11]) + ms(fields[12]), system: ms(fields[12]) };
  } catch {
    return { all: 0, system: 0 };
  }
}

/** This process's children by role, told apart by their command line. */
function roles(): Map<string, number> {
  const named = new Map<string, number>();
  for (const pid of processTree(process.pid).slice(1)) {
    let command: string;
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
    } catch {
      continue;
    }
    const role = command.includes("target.ts")
      ? "target"
      : command.includes("process-floor-child")
        ? "floor child"
        : / serve\b/.test(command)
          ? "serve"
          : / executor\b/.test(command)
            ? "executor"
            : undefined;
    if (role) named.set(role, pid);
  }
  return named;
}

async function backends(stack: Stack): Promise<number[]> {
  return (await stack.sql`SELECT pid /* bench-probe */ FROM pg_stat_activity WHERE datname = ${stack.database}`).map((r) => r.pid as number);
}

type Executed = Map<string, { calls: number; ms: number; planMs: number }>;

async function executed(stack: Stack): Promise<Executed> {
  const rows = await stack.sql`
    SELECT s.query /* bench-probe */, sum(s.calls)::float8 AS calls, sum(s.total_exec_time + s.total_plan_time)::float8 AS ms, sum(s.total_plan_time)::float8 AS plan_ms
      FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = ${stack.database} AND s.query NOT LIKE '%bench-probe%' GROUP BY s.query`;
  return new Map(rows.map((r) => [r.query as string, { calls: r.calls as number, ms: r.ms as number, planMs: r.plan_ms as number }]));
}

/** The statements that took the most time between two readings, per plan. */
function printTopStatements(label: string, before: Executed, after: Executed, plans: number): void {
  const delta = [...after]
    .map(([query, a]) => {
      const b = before.get(query) ?? { calls: 0, ms: 0, planMs: 0 };
      return { query, calls: a.calls - b.calls, ms: a.ms - b.ms, planMs: a.planMs - b.planMs };
    })
    .filter((d) => d.calls > 0)
    .sort((x, y) => y.ms - x.ms);
  const totalMs = delta.reduce((sum, d) => sum + d.ms, 0);
  const planMs = delta.reduce((sum, d) => sum + d.planMs, 0);
  console.log(
    `statements over the ${label} blocks (${plans} plans): ${(totalMs / plans).toFixed(3)} ms of execution + planning per plan (planning ${(planMs / plans).toFixed(3)}); nested statements count inside their callers too`,
  );
  for (const d of delta.slice(0, 20)) {
    console.log(
      `  ${(d.ms / plans).toFixed(3).padStart(7)} ms (plan ${(d.planMs / plans).toFixed(3)})  ${(d.calls / plans).toFixed(2).padStart(6)} calls  ${d.query.replace(/\s+/g, " ").slice(0, 150)}`,
    );
  }
}

/** Runs `work` for one block; prints CPU ms per completed unit for each process, and returns that unit count. */
async function block(stack: Stack, label: string, work: (worker: number) => Promise<void>): Promise<number> {
  const processes = roles();
  const before = new Map([...processes].map(([role, pid]) => [role, cpuMs(pid)]));
  const serveSystemBefore = cpu(processes.get("serve") ?? 0).system;
  const backendsBefore = new Map((await backends(stack)).map((pid) => [pid, cpuMs(pid)]));
  const self = process.cpuUsage();
  let done = 0;
  const rate = await throughput(IN_FLIGHT, SECONDS, async (worker) => {
    await work(worker);
    done++;
  });
  const own = process.cpuUsage(self);
  let postgresMs = 0;
  for (const pid of await backends(stack)) postgresMs += cpuMs(pid) - (backendsBefore.get(pid) ?? 0);
  const per = (ms: number) => (ms / done).toFixed(2);
  // The kernel's share of serve's: socket writes (each statement, request and answer) are paid there.
  const serveSystem = `(system ${per(cpu(processes.get("serve") ?? 0).system - serveSystemBefore)})`;
  const parts = [...processes].map(([role, pid]) => `${role} ${per(cpuMs(pid) - before.get(role)!)}${role === "serve" ? ` ${serveSystem}` : ""}`);
  const total = [...processes].reduce((sum, [role, pid]) => sum + cpuMs(pid) - before.get(role)!, 0) + postgresMs + (own.user + own.system) / 1000;
  console.log(
    `${label}: ${rate.toFixed(1)}/s, CPU ms per plan: ${parts.join(", ")}, postgres ${per(postgresMs)}, bench ${per((own.user + own.system) / 1000)}; total ${per(total)}  (load ${os.loadavg()[0]!.toFixed(1)})`,
  );
  return done;
}

const stack = await startStack({ adminUrl, contacts: CONTACTS, agents: IN_FLIGHT }).catch(async (err: unknown) => {
  await cluster?.destroy();
  throw err;
});
let processFloor: IntakeFloor | undefined;
try {
  if (cluster) await stack.sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
  await createFloorTables(stack.sql);
  const intake = async (worker: number) => {
    await stack.submit(randomInt(1, CONTACTS + 1), { agent: worker });
  };
  await throughput(IN_FLIGHT, Math.min(SECONDS, 3), intake); // warm-up: JIT, pools
  const before = cluster ? await executed(stack) : undefined;
  let plans = 0;
  for (let i = 0; i < BLOCKS; i++) plans += await block(stack, "intake", intake);
  if (before) printTopStatements("intake", before, await executed(stack), plans);
  const templates = await captureTemplates(stack.sql);
  const floorBefore = cluster ? await executed(stack) : undefined;
  let floorPlans = 0;
  for (let i = 0; i < BLOCKS; i++) {
    floorPlans += await block(stack, "floor", async () => {
      await floorSubmit(stack.sql, templates, () => floorGet(stack, randomInt(1, CONTACTS + 1)));
    });
  }
  if (floorBefore) printTopStatements("floor", floorBefore, await executed(stack), floorPlans);
  const across = (processFloor = await startIntakeFloor(stack, adminUrl, templates));
  const acrossSubmit = async () => across.submit(mergeBody(randomInt(1, CONTACTS + 1)));
  await throughput(IN_FLIGHT, Math.min(SECONDS, 3), acrossSubmit); // warm-up
  const acrossBefore = cluster ? await executed(stack) : undefined;
  let acrossPlans = 0;
  for (let i = 0; i < BLOCKS; i++) acrossPlans += await block(stack, "process floor", acrossSubmit);
  if (acrossBefore) printTopStatements("process floor", acrossBefore, await executed(stack), acrossPlans);
} finally {
  await processFloor?.stop();
  await stack.stop();
  await cluster?.destroy();
}
