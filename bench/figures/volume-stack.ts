/**
 * Countersign under volume (issue 14), run as users run it: `replicas` × `countersign serve` on one
 * PostgreSQL database, a Slack emulator that enforces Slack's per-channel limit on
 * chat.postMessage (429 ratelimited with Retry-After), a real HTTP webhook receiver, and the fake
 * JSON target in its own process. Agents: `volume-0` … `volume-N` at the product's default limits,
 * each with a webhook; `backlog`, whose limits are raised so it can fill the Slack queue fast, with
 * none; `probe`, with a webhook. No executor: nothing here is approved.
 */
import { fork, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { SLACK_CHANNEL_RATE_LIMIT, SlackEmulator } from "../../test/support/slack-emulator.ts";
import { cleanEnv, countersignCommand, outputOf, productDir, startUntilReady, type Started } from "../processes.ts";
import { APPROVER, databasePrefix, databaseUrl, epochNow, mergeBody, READ_TOKEN, REVIEW_CHANNEL, SIGNING_SECRET, WRITE_TOKEN } from "../stack.ts";
import { freePort } from "./start.ts";

const TARGET = fileURLToPath(new URL("../target.ts", import.meta.url));
const EXECUTOR_TOKEN = "bench-executor-token-0123456789abcdef";
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

/** Whether the product knows `limits:` (agent limits, issue 14); an older one refuses the key. */
function hasAgentLimits(): boolean {
  const example = path.join(productDir(), "countersign.example.yml");
  return existsSync(example) && /^limits:/m.test(readFileSync(example, "utf8"));
}

export async function startVolumeStack(options: { adminUrl: string; replicas: number; volumeAgents: number; contacts: number }): Promise<VolumeStack> {
  const cli = countersignCommand();
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-bench-volume-"));
  const database = `${databasePrefix()}_vol_${randomBytes(5).toString("hex")}`;
  const admin = postgres(options.adminUrl, { onnotice: () => {}, max: 1 });
  // Slack's pace, enforced: a product that posts faster than a channel takes gets 429s.
  const slack = new SlackEmulator({ channelRateLimit: SLACK_CHANNEL_RATE_LIMIT });
  const webhooks: Received[] = [];
  const listeners = new Set<(hook: Received) => boolean>();
  let receiver: Server | undefined;
  let target: ChildProcess | undefined;
  const processes: Started[] = [];
  let sql: postgres.Sql | undefined;
  const stop = async () => {
    for (const p of processes.reverse()) await p.stop();
    await sql?.end({ timeout: 5 });
    await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end({ timeout: 5 });
    if (target?.connected) {
      const exited = new Promise((r) => target!.once("exit", r));
      target.disconnect();
      await exited;
    }
    if (receiver) {
      const closed = new Promise((r) => receiver!.close(r));
      receiver.closeAllConnections();
      await closed;
    }
    await slack.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await admin.unsafe(`CREATE DATABASE ${database}`);
    target = fork(TARGET, [String(options.contacts), READ_TOKEN, WRITE_TOKEN], { execArgv: ["--import", import.meta.resolve("tsx")], env: cleanEnv(), stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const targetUrl = await new Promise<string>((resolve, reject) => {
      target!.once("exit", (code) => reject(new Error(`bench/target.ts exited (${code}) before it listened`)));
      target!.on("message", (m: { url?: string }) => m.url && resolve(m.url));
    });
    await slack.start();
    receiver = createServer((req, res) => {
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
    await new Promise<void>((r) => receiver!.listen(0, "127.0.0.1", r));
    const hookUrl = (agent: string) => `http://127.0.0.1:${(receiver!.address() as AddressInfo).port}/hooks/${agent}`;
    const volumeAgents = Array.from({ length: options.volumeAgents }, (_, i) => `volume-${i}`);
    const limits = hasAgentLimits();
    writeFileSync(path.join(dir, "countersign.yml"), [
      "environment: bench",
      `slack: { reviewChannel: ${REVIEW_CHANNEL} }`,
      `defaults: { approvers: [${APPROVER}] }`,
      "webhooks:",
      "  allowedHosts: [127.0.0.1]",
      "  agents:",
      ...[...volumeAgents, PROBE_AGENT].map((a) => `    ${a}: { callbackUrl: "${hookUrl(a)}" }`),
      "targets:",
      "  crm:",
      "    adapter: http.json",
      `    baseUrl: ${targetUrl}`,
      '    read: { headers: { Authorization: "Bearer ${CRM_READ}" } }',
      '    write: { headers: { Authorization: "Bearer ${CRM_WRITE}" } }',
      '    allow: { ops: [merge], paths: ["/contacts/*"] }',
      // The volume agents keep the product's defaults (60 a minute, 100 waiting); only the backlog's filler is raised.
      ...(limits ? [`limits: { agents: { ${BACKLOG_AGENT}: { plansPerMinute: 1000000, maxPending: 1000000 }, ${PROBE_AGENT}: { plansPerMinute: 1000000, maxPending: 1000000 } } }`] : []),
    ].join("\n"));
    const { privateKey } = generateKeyPairSync("ed25519");
    const dbUrl = databaseUrl(options.adminUrl, database);
    const envFor = (port: number) => cleanEnv({
      COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
      COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN,
      CRM_READ: READ_TOKEN,
      LOG_LEVEL: "info", // the "countersign serving" line that says it is ready is logged at info
      DATABASE_URL: dbUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      COUNTERSIGN_GRANT_PRIVATE_KEY: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_API_URL: slack.url,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
    });
    const ports: number[] = [];
    for (let r = 0; r < options.replicas; r++) {
      const port = await freePort();
      // One at a time: the first migrates, the next finds the schema current.
      processes.push(await startUntilReady([...cli.args, "serve"], { cwd: dir, env: envFor(port), ready: /countersign serving/, timeoutMs: 300_000 }));
      ports.push(port);
    }
    const urls = ports.map((port) => `http://127.0.0.1:${port}`);
    const keys = new Map<string, string>();
    const names = [...volumeAgents, BACKLOG_AGENT, PROBE_AGENT];
    // Added once serve migrated, so `agents add` never races a migration; four at a time (each a node process).
    for (let i = 0; i < names.length; i += 4) {
      await Promise.all(names.slice(i, i + 4).map(async (name) => {
        const added = await outputOf([...cli.args, "agents", "add", name], { cwd: dir, env: envFor(ports[0]!) });
        keys.set(name, added.trimEnd().split("\n").at(-1)!);
      }));
    }
    sql = postgres(dbUrl, { onnotice: () => {}, max: 4 });
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
      sql,
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
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

/** Slack outbox rows still to deliver: all of them, and those for channels (previews, replies, updates; not Home tabs). */
export async function slackBacklog(sql: postgres.Sql): Promise<{ all: number; channel: number }> {
  const [row] = await sql`SELECT count(*)::int AS all, (count(*) FILTER (WHERE kind = 'slack'))::int AS channel /* bench-probe */ FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL AND kind LIKE 'slack%'`;
  return { all: row!.all as number, channel: row!.channel as number };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** The plan ids a Slack message names (a preview's buttons and link, a digest's lines). */
export function planIdsIn(message: { text?: string; blocks?: unknown }): Set<string> {
  return new Set(JSON.stringify([message.text ?? "", message.blocks ?? []]).match(UUID) ?? []);
}
