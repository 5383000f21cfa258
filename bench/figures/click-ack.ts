import { fileURLToPath } from "node:url";
import { alternate } from "../blocks.ts";
import { percentile, type FigureSource } from "../figure.ts";
import { cleanEnv, startUntilReady } from "../processes.ts";
import { APPROVER, benchDatabaseUrl, REVIEW_CHANNEL, SIGNING_SECRET, startStack, until } from "../stack.ts";
import { SlackRequests } from "../../test/support/slack-requests.ts";
import { freePort } from "./start.ts";

const CLICKS = 50;
const SUBMITTING = 8;
const BARE_BOLT = fileURLToPath(new URL("../bare-bolt.ts", import.meta.url));

/**
 * `click_ack_p99_50_concurrent` (≤ 1.5): 50 Approve clicks at once (signed Slack `block_actions`
 * POSTs to /slack/events, each on its own pending plan), the p99 of the time until each is
 * acknowledged; floor: the same 50 signed clicks to a bare Bolt 5.1 app that only acks (Bolt's
 * HTTPReceiver).
 * After a product block the bench waits until the executor applied all 50, so blocks do not overlap.
 */
export const clickAck: FigureSource = {
  title: "Slack click → HTTP ack",
  async measure(pace) {
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl)
      return [{ name: "click_ack_p99_50_concurrent", skipped: "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on" }];
    const stack = await startStack({ adminUrl, contacts: 2 * CLICKS });
    const port = await freePort();
    const bare = await startUntilReady(["--import", import.meta.resolve("tsx"), BARE_BOLT, String(port), SIGNING_SECRET, stack.slack.url], {
      cwd: process.cwd(),
      env: cleanEnv(),
      ready: /bare bolt listening/,
    }).catch(async (err: unknown) => {
      await stack.stop();
      throw err;
    });
    try {
      const bareClicks = new SlackRequests({ baseUrl: `http://127.0.0.1:${port}`, signingSecret: SIGNING_SECRET });
      let round = 0;
      const burst = async (clicks: SlackRequests, plans: { id: string; hash: string }[]) =>
        percentile(
          await Promise.all(
            plans.map(async (plan) => {
              const started = performance.now();
              const res = await clicks.blockAction({
                user: APPROVER,
                actionId: "approve",
                value: JSON.stringify({ planId: plan.id, hash: plan.hash }),
                channelId: REVIEW_CHANNEL,
                messageTs: "1733140000.000100",
              });
              await res.arrayBuffer();
              const elapsed = performance.now() - started;
              if (res.status !== 200) throw new Error(`a click was answered ${res.status}`);
              return elapsed;
            }),
          ),
          99,
        );
      const product = async () => {
        // Distinct contacts per burst, alternating halves, so no plan goes stale on another's write.
        const first = (round++ % 2) * CLICKS;
        const plans: { id: string; hash: string }[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: SUBMITTING }, async () => {
            for (let n = ++next; n <= CLICKS; n = ++next) plans.push(await stack.submit(first + n));
          }),
        );
        const p99 = await burst(stack.clicks, plans);
        const ids = plans.map((p) => p.id);
        await until(
          "the executor to apply the burst's plans",
          async () => {
            const [row] = await stack.sql`SELECT count(*)::int AS n FROM plans WHERE id = ANY(${ids}::uuid[]) AND status IN ('applied', 'failed', 'stale')`;
            return row!.n === CLICKS;
          },
          300_000,
          100,
        );
        return p99;
      };
      const floor = () =>
        burst(
          bareClicks,
          Array.from({ length: CLICKS }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, hash: "sha256:floor" })),
        );
      const blocks = await alternate(pace.blocks, product, floor);
      return [
        {
          name: "click_ack_p99_50_concurrent",
          unit: "ms",
          ...blocks,
          goal: { atMost: 1.5 },
          note: `${CLICKS} signed block_actions POSTs at once; floor: bare Bolt 5.1, HTTPReceiver; the product's Slack posts (1/s per channel) still draining behind`,
        },
      ];
    } finally {
      await bare.stop();
      await stack.stop();
    }
  },
};
