/**
 * Where an approve click's time goes before the target sees the PATCH: for a few plans, one at a
 * time, the click's ack, each audit event's time (the server's and executor's clock: same
 * machine) and the PATCH's arrival at the fake target, in ms after the click was sent, then the
 * median of each over the plans (a loaded machine makes single clicks swing 3–5×). Slack Web API
 * calls (the outbox delivering) that reach the emulator between a click and its PATCH are listed
 * under the click, and the PATCH's median is given apart for the clicks that saw none.
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
// When the Slack emulator received each Web API call (serve's outbox delivering): a click whose
// click → PATCH window saw one shares the 2 cores with a delivery, which the figure's floors never do.
const slackAt: { at: number; method: string }[] = [];
const record = stack.slack.calls.push.bind(stack.slack.calls);
stack.slack.calls.push = (...calls) => {
  for (const call of calls) slackAt.push({ at: epochNow(), method: call.method });
  return record(...calls);
};
/** PATCH ms after the click, by whether Slack calls arrived in between. */
const byOverlap = { quiet: [] as number[], overlapped: [] as number[] };
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
    const events =
      await stack.sql`SELECT type, extract(epoch FROM at) * 1000 AS at /* bench-probe */ FROM audit_events WHERE plan_id = ${plan.id} AND type <> 'plan.submitted' ORDER BY id`;
    const calls = slackAt.filter((c) => c.at >= clicked && c.at <= clicked + patched);
    const during = calls.length;
    if (during > 0) console.log(`  Slack calls before the PATCH: ${calls.map((c) => `${c.method} +${(c.at - clicked).toFixed(0)}`).join(", ")}`);
    byOverlap[during > 0 ? "overlapped" : "quiet"].push(patched);
    const step: [string, number][] = [["ack", acked], ...events.map((e): [string, number] => [e.type as string, Number(e.at) - clicked]), ["PATCH", patched]];
    for (const [name, ms] of step) steps.set(name, [...(steps.get(name) ?? []), ms]);
    loads.push(os.loadavg()[0]!);
    // The click's epoch (ms) lines it up with a socket trace of serve and the executor (bench/socket-trace.mjs).
    console.log(`${step.map(([name, ms]) => `${name} ${ms.toFixed(0)}`).join("  ")}  (ms; load ${loads.at(-1)!.toFixed(1)}; clicked @${clicked.toFixed(3)})`);
  }
  console.log(
    `median of ${PLANS}: ${[...steps].map(([name, ms]) => `${name} ${median(ms).toFixed(1)}`).join("  ")}  (ms; load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)})`,
  );
  const show = (ms: number[]) => (ms.length > 0 ? `${median(ms).toFixed(1)} ms (${ms.length})` : "none");
  console.log(`PATCH median, clicks with no Slack call before it: ${show(byOverlap.quiet)}; with one or more: ${show(byOverlap.overlapped)}`);
} finally {
  await stack.stop();
}
