/**
 * Where an approve click's time goes before the target sees the PATCH: for a few plans, one at a
 * time, the click's ack, each audit event's time (the server's and executor's clock: same
 * machine) and the PATCH's arrival at the fake target, in ms after the click was sent, then the
 * median of each over the plans (a loaded machine makes single clicks swing 3–5×).
 *   node --import tsx bench/approve-timeline.ts [--product DIR] [PLANS]      (default 8)
 * Needs BENCH_DATABASE_URL or TEST_DATABASE_URL (a fresh database is made and dropped).
 */
import os from "node:os";
import { median } from "./figure.ts";
import { useProduct } from "./processes.ts";
import { benchDatabaseUrl, clickApprove, epochNow, planStatus, startStack, undelivered, until } from "./stack.ts";

const args = process.argv.slice(2);
const productAt = args.indexOf("--product");
if (productAt >= 0) {
  useProduct(args[productAt + 1] ?? "");
  args.splice(productAt, 2);
}
const PLANS = Number(args[0] ?? 8);
if (!Number.isInteger(PLANS) || PLANS < 1) throw new Error(`PLANS must be a positive whole number, got '${args[0]}'`);
const adminUrl = benchDatabaseUrl();
if (!adminUrl) throw new Error("set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create a database on");

const stack = await startStack({ adminUrl, contacts: PLANS });
/** Each step's ms after the click, per click, in the order first seen. */
const steps = new Map<string, number[]>();
const loads: number[] = [];
try {
  for (let i = 1; i <= PLANS; i++) {
    const plan = await stack.submit(i);
    await until("the review post", async () => (await undelivered(stack.sql)) === 0, 120_000, 20);
    const arrived = stack.nextWrite(`/contacts/${i}`);
    const clicked = epochNow();
    await clickApprove(stack, plan);
    const acked = epochNow() - clicked;
    const patched = (await arrived) - clicked;
    await until(`plan ${plan.id} applied`, async () => (await planStatus(stack, plan.id)) === "applied", 120_000, 20);
    const events = await stack.sql`SELECT type, extract(epoch FROM at) * 1000 AS at /* bench-probe */ FROM audit_events WHERE plan_id = ${plan.id} AND type <> 'plan.submitted' ORDER BY id`;
    const step: [string, number][] = [["ack", acked], ...events.map((e): [string, number] => [e.type as string, Number(e.at) - clicked]), ["PATCH", patched]];
    for (const [name, ms] of step) steps.set(name, [...(steps.get(name) ?? []), ms]);
    loads.push(os.loadavg()[0]!);
    console.log(`${step.map(([name, ms]) => `${name} ${ms.toFixed(0)}`).join("  ")}  (ms; load ${loads.at(-1)!.toFixed(1)})`);
  }
  console.log(`median of ${PLANS}: ${[...steps].map(([name, ms]) => `${name} ${median(ms).toFixed(1)}`).join("  ")}  (ms; load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)})`);
} finally {
  await stack.stop();
}
