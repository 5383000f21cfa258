import os from "node:os";
import { percentile, type AnyFigure, type Figure, type FigureSource } from "../figure.ts";
import { benchDatabaseUrl, epochNow, REVIEW_CHANNEL } from "../stack.ts";
import { BACKLOG_AGENT, planIdsIn, PROBE_AGENT, slackBacklog, startVolumeStack, type VolumeStack } from "./volume-stack.ts";

const REPLICAS = 2;
const AGENTS = 12;
const CONTACTS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number) => ms / 1000;
const load = () => os.loadavg()[0]!.toFixed(1);

/**
 * Countersign under volume, as figures rather than timed tests, on one stack (two `serve` replicas
 * on one PostgreSQL, Slack's per-channel limit enforced by the emulator, a real webhook receiver):
 *  (a) 600 plans (120 with --quick) submitted within one minute to one review channel by 12 agents
 *      at the default agent limits: seconds from each submission until reviewers can see it (a
 *      top-level message in the channel naming the plan: its preview, or a digest line); PASS when
 *      every plan is visible within 60 s;
 *  (b) webhook delivery from a transition (an agent's cancel) while a Slack backlog of 5 000 rows
 *      (1 000 with --quick; thread replies, which digests do not fold) waits: p99 < 2 s;
 *  (c) duplicate posts (a plan named by two top-level messages, or the same thread reply twice)
 *      and duplicate webhooks (one plan's same status twice) across the two replicas: 0.
 */
export const volume: FigureSource = {
  title: "volume: review visibility, webhooks behind a Slack backlog, duplicates",
  async measure(pace) {
    const plans = pace.quick ? 120 : 600;
    const backlogRows = pace.quick ? 1000 : 5000;
    const probes = pace.quick ? 8 : 20;
    const names = [
      `review visibility: ${plans} plans in 60 s by ${AGENTS} agents`,
      `webhook p99 behind a Slack backlog of ${backlogRows} rows`,
      `duplicates across ${REPLICAS} replicas`,
    ];
    const adminUrl = benchDatabaseUrl();
    if (!adminUrl) return names.map((name) => ({ name, skipped: "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create databases on" }));
    const stack = await startVolumeStack({ adminUrl, replicas: REPLICAS, volumeAgents: AGENTS, contacts: CONTACTS });
    try {
      const figures: AnyFigure[] = [];
      figures.push(await reviewVisibility(stack, names[0]!, plans, pace.quick ? 90_000 : 120_000));
      figures.push(await webhookBehindBacklog(stack, names[1]!, backlogRows, probes, pace.quick ? 60_000 : 120_000));
      figures.push(duplicates(stack, names[2]!));
      return figures;
    } finally {
      await stack.stop();
    }
  },
};

/** (a): submissions spread evenly over 60 s, agents and replicas in turn; visibility polled every 100 ms. */
async function reviewVisibility(stack: VolumeStack, name: string, plans: number, waitAfterMs: number): Promise<Figure> {
  const sentAt = new Map<string, number>();
  const seenAt = new Map<string, number>();
  const scanned = new WeakMap<object, number>();
  const scan = () => {
    const now = epochNow();
    for (const message of stack.slack.messagesIn(REVIEW_CHANNEL)) {
      // A digest may be edited to list more plans: scan a message again when it changed.
      if (scanned.get(message) === message.history.length) continue;
      scanned.set(message, message.history.length);
      for (const id of planIdsIn(message)) if (!seenAt.has(id)) seenAt.set(id, now);
    }
  };
  const poll = setInterval(scan, 100);
  let limited = 0;
  try {
    const start = epochNow() + 500;
    const submissions: Promise<void>[] = [];
    for (let i = 0; i < plans; i++) {
      const at = start + (i * 60_000) / plans;
      await sleep(Math.max(0, at - epochNow()));
      const agent = stack.volumeAgents[i % stack.volumeAgents.length]!;
      submissions.push(
        (async () => {
          const first = epochNow();
          // An agent over its limit waits the Retry-After it was given; its plan counts from its first try.
          for (;;) {
            const answer = await stack.submit(agent, 1 + (i % CONTACTS), i);
            if ("id" in answer) return void sentAt.set(answer.id, first);
            limited += 1;
            await sleep(answer.retryAfter * 1000);
          }
        })(),
      );
    }
    await Promise.all(submissions);
    const deadline = epochNow() + waitAfterMs;
    while (epochNow() < deadline && [...sentAt.keys()].some((id) => !seenAt.has(id))) await sleep(250);
    scan();
  } finally {
    clearInterval(poll);
  }
  const now = epochNow();
  const unseen = [...sentAt.keys()].filter((id) => !seenAt.has(id));
  // A plan never seen counts with how long it had waited when the bench stopped looking: a lower bound.
  const latencies = [...sentAt].map(([id, sent]) => seconds((seenAt.get(id) ?? now) - sent));
  const { refused, early } = stack.slack.rateLimited;
  return {
    name: `${name}, max`,
    value: Math.max(...latencies),
    unit: "s",
    goal: { below: 60 },
    note: `p50 ${percentile(latencies, 50).toFixed(1)} s, p99 ${percentile(latencies, 99).toFixed(1)} s${unseen.length ? `; ${unseen.length} of ${plans} never visible within ${seconds(waitAfterMs)} s of the last submission (counted as a lower bound)` : ""}; ${REPLICAS} replicas; Slack 429s ${refused} (early retries ${early}); agent 429s ${limited}; load ${load()}`,
  };
}

/**
 * (b): fill the Slack queue through the backlog agent, then cancel probe plans one a second and
 * time each cancel's webhook. The backlog is thread replies, which a digest cannot fold away: the
 * backlog plans are submitted, left until their previews or digests are out (at most 120 s), then
 * cancelled, each cancel a reply of its own plan to post at the channel's pace.
 */
async function webhookBehindBacklog(stack: VolumeStack, name: string, rows: number, probes: number, timeoutMs: number): Promise<Figure> {
  const filling = Date.now();
  const ids: string[] = [];
  await inParallel(rows, async (i, worker) => {
    const answer = await stack.submit(BACKLOG_AGENT, 1 + (i % CONTACTS), worker);
    if (!("id" in answer)) throw new Error(`the backlog agent was limited (Retry-After ${answer.retryAfter} s); its limits should be out of reach`);
    ids.push(answer.id);
  });
  const shown = Date.now() + 120_000;
  while (Date.now() < shown && (await slackBacklog(stack.sql)).channel > 100) await sleep(1000);
  await inParallel(ids.length, (i, worker) => stack.cancel(BACKLOG_AGENT, ids[i]!, worker));
  const fillSeconds = seconds(Date.now() - filling);
  const backlogBefore = await slackBacklog(stack.sql);
  const latencies: number[] = [];
  let timedOut = 0;
  await Promise.all(
    Array.from({ length: probes }, async (_, i) => {
      await sleep(i * 1000);
      const answer = await stack.submit(PROBE_AGENT, 1 + (i % CONTACTS), i);
      if (!("id" in answer)) throw new Error(`the probe agent was limited (Retry-After ${answer.retryAfter} s)`);
      const arrived = new Promise<number>((resolve) =>
        stack.onWebhook((hook) => hook.planId === answer.id && hook.status === "cancelled" && (resolve(hook.at), true)),
      );
      const cancelled = epochNow(); // before the request: the transition happens inside it
      await stack.cancel(PROBE_AGENT, answer.id, i);
      const at = await Promise.race([arrived, sleep(timeoutMs).then(() => undefined)]);
      if (at === undefined) {
        timedOut += 1;
        latencies.push(seconds(timeoutMs));
      } else latencies.push(seconds(at - cancelled));
    }),
  );
  const backlogAfter = await slackBacklog(stack.sql);
  return {
    name,
    value: percentile(latencies, 99),
    unit: "s",
    goal: { below: 2 },
    note: `${probes} probes one a second, from the cancel request to the webhook's arrival; p50 ${percentile(latencies, 50).toFixed(2)} s, max ${Math.max(...latencies).toFixed(2)} s${timedOut ? `; ${timedOut} never arrived within ${seconds(timeoutMs)} s (counted as ${seconds(timeoutMs)} s)` : ""}; Slack backlog before the probes ${backlogBefore.channel} channel rows (${backlogBefore.all} with Home tabs), after ${backlogAfter.channel} (${backlogAfter.all}) (${rows} plans submitted, shown and cancelled in ${fillSeconds.toFixed(0)} s); load ${load()}`,
  };
}

/** Runs `task(0…count-1)` eight at a time, each worker on its own replica in turn. */
async function inParallel(count: number, task: (i: number, worker: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, worker) => {
      while (next < count) await task(next++, worker);
    }),
  );
}

/** (c): over everything the stack delivered: plans named by more than one top-level message, repeated thread replies, repeated webhooks. */
function duplicates(stack: VolumeStack, name: string): Figure {
  const mentions = new Map<string, number>();
  let posts = 0;
  let replies = 0;
  let repeatedReplies = 0;
  for (const message of stack.slack.messagesIn(REVIEW_CHANNEL)) {
    posts += 1;
    for (const id of planIdsIn(message)) mentions.set(id, (mentions.get(id) ?? 0) + 1);
    const texts = new Set<string>();
    for (const reply of message.replies) {
      replies += 1;
      const text = JSON.stringify([reply.text, reply.blocks]);
      if (texts.has(text)) repeatedReplies += 1;
      texts.add(text);
    }
  }
  const repeatedPosts = [...mentions.values()].reduce((sum, n) => sum + n - 1, 0);
  const hooks = new Map<string, number>();
  for (const hook of stack.webhooks) hooks.set(`${hook.planId} ${hook.status}`, (hooks.get(`${hook.planId} ${hook.status}`) ?? 0) + 1);
  const repeatedHooks = [...hooks.values()].reduce((sum, n) => sum + n - 1, 0);
  return {
    name,
    value: repeatedPosts + repeatedReplies + repeatedHooks,
    unit: "duplicates",
    goal: { below: 1 },
    note: `${repeatedPosts} plans posted twice among ${posts} top-level posts naming ${mentions.size} plans, ${repeatedReplies} repeated among ${replies} thread replies, ${repeatedHooks} repeated among ${stack.webhooks.length} webhooks; load ${load()}`,
  };
}
