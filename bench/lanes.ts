/**
 * Webhook latency while a Slack channel has a backlog (the goal: p99 under 2 s with 5 000 rows
 * queued): BACKLOG rows wait in one channel lane, drained at Slack's pace (one post a
 * second, a handler that takes 1 s), while PLANS plans with a callback URL are submitted one
 * every 200 ms to the same channel through the real outbox worker; each plan's `pending`
 * webhook arrives over real HTTP at a local receiver. Prints the latency from submit to arrival.
 *   node --import tsx bench/lanes.ts [BACKLOG] [PLANS]     (defaults 5000, 50; TEST_DATABASE_URL names the server)
 * A database of its own is created next to the one the URL names and dropped at the end.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { sql } from "drizzle-orm";
import type { Config } from "../src/config/load.ts";
import type { ServiceContext } from "../src/service/context.ts";
import { startOutboxWorker } from "../src/service/delivery/outbox-worker.ts";
import { submitPlan } from "../src/service/intake/submit-plan.ts";
import { webhookSink } from "../src/webhooks/webhook-sink.ts";
import { mergeRequest, openHarness, targetConfig } from "../test/support/harness.ts";
import { openThrowawayPostgres } from "../test/support/throwaway-postgres.ts";

const BACKLOG = Number(process.argv[2] ?? 5000);
const PLANS = Number(process.argv[3] ?? 50);
for (const [what, n] of [
  ["BACKLOG", BACKLOG],
  ["PLANS", PLANS],
] as const) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`${what} must be a positive whole number, got '${n}'`);
}
const serverUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = await openThrowawayPostgres(serverUrl, { prefix: "cs_bench_lanes" });

const arrived = new Map<string, number>();
const receiver = createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => (body += c.toString("utf8")));
  req.on("end", () => {
    const { planId, status } = JSON.parse(body) as { planId: string; status: string };
    if (status === "pending") arrived.set(planId, performance.now());
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

try {
  await database.migrate();
  const h = await openHarness(database, { targets: (u) => ({ crm: targetConfig(u, { policy: { reviewChannel: "C0BUSY" } }) }) });
  const slackConfig = {
    enabled: true,
    botToken: "xoxb-bench",
    signingSecret: "s",
    appToken: undefined,
    apiUrl: undefined,
    reviewChannel: "C0BUSY",
  } as unknown as Config["slack"];
  const ctx: ServiceContext = {
    ...h.ctx,
    clock: () => new Date(),
    sinks: ["slack", "webhook"],
    config: {
      ...h.ctx.config,
      slack: slackConfig,
      webhooks: { allowedHosts: [new URL(hookUrl).host], agents: {} },
      limits: { plansPerMinute: 100_000, maxPending: 100_000, agents: {} } as never,
    },
  };
  await database.rows(sql`
    INSERT INTO outbox (plan_id, kind, lane, priority, payload, available_at)
    SELECT NULL, 'slack', 'slack:C0BUSY', 1, '{"type":"plan.seeded"}', now() FROM generate_series(1, ${BACKLOG})`);
  let posted = 0;
  const worker = startOutboxWorker(ctx, {
    handlers: {
      // Slack's pace: a post a second in this channel.
      slack: async () => {
        await new Promise((r) => setTimeout(r, 1000));
        posted++;
      },
      webhook: webhookSink(ctx),
    },
    intervalMs: 250,
    report: { failed: (err) => console.error("delivery failed:", err) },
  });
  const submitted = new Map<string, number>();
  for (let i = 0; i < PLANS; i++) {
    const t = performance.now();
    const { plan } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `lanes bench ${i}`, callbackUrl: hookUrl }) });
    submitted.set(plan.id, t);
    await new Promise((r) => setTimeout(r, 200));
  }
  const deadline = Date.now() + 120_000;
  while (arrived.size < PLANS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await worker.stop();
  const latencies = [...submitted].map(([id, t]) => (arrived.get(id) ?? Infinity) - t).sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]!;
  const [{ left }] = (await database.rows<{ left: string }>(sql`SELECT count(*) AS left FROM outbox WHERE lane = 'slack:C0BUSY' AND delivered_at IS NULL`)) as [
    { left: string },
  ];
  console.log(
    `load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; Slack backlog ${BACKLOG} rows in slack:C0BUSY (${Number(left)} still queued at the end, ${posted} posted meanwhile)`,
  );
  console.log(
    `webhook of a submitted plan, submit → arrival over HTTP (${PLANS} plans, one every 200 ms): p50 ${pct(50).toFixed(0)} ms, p99 ${pct(99).toFixed(0)} ms, max ${latencies.at(-1)!.toFixed(0)} ms, ${arrived.size} of ${PLANS} arrived`,
  );
  await h.close();
} finally {
  receiver.close();
  await database.close();
}
