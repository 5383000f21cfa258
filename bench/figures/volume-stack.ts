/**
 * Countersign under volume, run as users run it: `replicas` × `countersign serve` on one
 * PostgreSQL database, a Slack emulator that enforces Slack's per-channel limit on
 * chat.postMessage (429 ratelimited with Retry-After), a real HTTP webhook receiver, and the fake
 * JSON target in its own process. Agents: `volume-0` … `volume-N` at the product's default limits,
 * each with a webhook; `backlog`, whose limits are raised so it can fill the Slack queue fast, with
 * none; `probe`, with a webhook. No executor: nothing here is approved.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type postgres from "postgres";
import { SLACK_CHANNEL_RATE_LIMIT, SlackEmulator } from "../../test/support/slack-emulator.ts";
import { epochNow, mergeBody, startProduct, type Product } from "../stack.ts";

export const BACKLOG_AGENT = "backlog";
export const PROBE_AGENT = "probe";

/** One webhook as the receiver got it. */
export interface Received {
  agent: string;
  planId: string;
  status: string;
  /** epoch ms (performance.timeOrigin + performance.now()) */
  at: number;
}

export interface VolumeStack {
  /** One base URL per replica; a load balancer would spread agents over them. */
  urls: string[];
  sql: postgres.Sql;
  slack: SlackEmulator;
  /** Agent name → API key. */
  keys: Map<string, string>;
  volumeAgents: string[];
  /** Every webhook received, in arrival order. */
  webhooks: Received[];
  /** Calls `listener` for each webhook as it arrives (until it returns true). */
  onWebhook(listener: (hook: Received) => boolean): void;
  /** `POST /v1/plans` as `agent` through replica `replica`: the plan id, or the 429's Retry-After seconds. */
  submit(agent: string, contact: number, replica: number): Promise<{ id: string } | { retryAfter: number }>;
  cancel(agent: string, planId: string, replica: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startVolumeStack(options: { adminUrl: string; replicas: number; volumeAgents: number; contacts: number }): Promise<VolumeStack> {
  const webhooks: Received[] = [];
  const listeners = new Set<(hook: Received) => boolean>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = epochNow();
      const agent = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname.split("/").at(-1) ?? "");
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { planId: string; status: string };
        const hook = { agent, planId: body.planId, status: body.status, at };
        webhooks.push(hook);
        for (const listener of listeners) if (listener(hook)) listeners.delete(listener);
      } catch {
        // counted by nobody: a malformed webhook shows as a missing one
      }
      res.writeHead(204).end();
    });
  });
  const closeReceiver = async () => {
    const closed = new Promise((r) => receiver.close(r));
    receiver.closeAllConnections();
    await closed;
  };
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const hookUrl = (agent: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/${agent}`;
  const volumeAgents = Array.from({ length: options.volumeAgents }, (_, i) => `volume-${i}`);
  // Slack's pace, enforced: a product that posts faster than a channel takes gets 429s.
  const slack = new SlackEmulator({ channelRateLimit: SLACK_CHANNEL_RATE_LIMIT });
  let product: Product;
  try {
    product = await startProduct({
      adminUrl: options.adminUrl,
      label: "vol",
      contacts: options.contacts,
      slack,
      config: [
        "webhooks:",
        `  allowedHosts: ["127.0.0.1:${(receiver.address() as AddressInfo).port}"]`,
        "  agents:",
        ...[...volumeAgents, PROBE_AGENT].map((a) => `    ${a}: { callbackUrl: "${hookUrl(a)}" }`),
      ],
      // The volume agents keep the product's defaults (60 a minute, 100 waiting); only the backlog's filler is raised.
      limits: `{ agents: { ${BACKLOG_AGENT}: { plansPerMinute: 1000000, maxPending: 1000000 }, ${PROBE_AGENT}: { plansPerMinute: 1000000, maxPending: 1000000 } } }`,
      replicas: options.replicas,
      agents: [...volumeAgents, BACKLOG_AGENT, PROBE_AGENT],
      executor: false,
      sqlMax: 4,
    });
  } catch (err) {
    await closeReceiver();
    throw err;
  }
  const { urls, keys } = product;
  const call = async (agent: string, replica: number, pathname: string, body?: string) => {
    const res = await fetch(`${urls[replica % urls.length]}${pathname}`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.get(agent)}`, "content-type": "application/json" },
      ...(body !== undefined ? { body } : {}),
    });
    return { res, text: await res.text() };
  };
  return {
    urls,
    sql: product.sql,
    slack,
    keys,
    volumeAgents,
    webhooks,
    onWebhook: (listener) => void listeners.add(listener),
    async submit(agent, contact, replica) {
      const { res, text } = await call(agent, replica, "/v1/plans", mergeBody(contact));
      if (res.status === 429) return { retryAfter: Number(res.headers.get("retry-after") ?? 1) };
      if (res.status !== 201) throw new Error(`POST /v1/plans as ${agent} answered ${res.status}: ${text.slice(0, 500)}`);
      return { id: (JSON.parse(text) as { id: string }).id };
    },
    async cancel(agent, planId, replica) {
      const { res, text } = await call(agent, replica, `/v1/plans/${planId}/cancel`);
      if (res.status !== 200) throw new Error(`cancel of ${planId} answered ${res.status}: ${text.slice(0, 500)}`);
    },
    stop: async () => {
      await product.stop();
      await closeReceiver();
    },
  };
}

/** Slack outbox rows still to deliver: all of them, and those for channels (previews, replies, updates; not Home tabs). */
export async function slackBacklog(sql: postgres.Sql): Promise<{ all: number; channel: number }> {
  const [row] =
    await sql`SELECT count(*)::int AS all, (count(*) FILTER (WHERE kind = 'slack'))::int AS channel /* bench-probe */ FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL AND kind LIKE 'slack%'`;
  return { all: row!.all as number, channel: row!.channel as number };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** The plan ids a Slack message names (a preview's buttons and link, a digest's lines). */
export function planIdsIn(message: { text?: string; blocks?: unknown }): Set<string> {
  return new Set(JSON.stringify([message.text ?? "", message.blocks ?? []]).match(UUID) ?? []);
}
