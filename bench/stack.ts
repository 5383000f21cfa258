/**
 * Countersign as users run it, for the ratio figures: `countersign serve` on its own PostgreSQL
 * database, a separate `countersign executor`, the Slack emulator (HTTP interactivity, signed) and
 * a fake JSON target. Every process is the product's built CLI (`--product` picks which).
 */
import { fork, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { crmTargetYaml } from "../test/support/crm-target-yaml.ts";
import { SlackEmulator } from "../test/support/slack-emulator.ts";
import { SlackRequests } from "../test/support/slack-requests.ts";
import { freePort } from "./figures/start.ts";
import { cleanEnv, countersignCommand, outputOf, productDir, startUntilReady, type Started } from "./processes.ts";

export const READ_TOKEN = "bench-read-token";
export const WRITE_TOKEN = "bench-write-token";
export const SIGNING_SECRET = "bench-signing-secret";
export const REVIEW_CHANNEL = "C0REVIEW";
export const APPROVER = "U0ALICE";
const EXECUTOR_TOKEN = "bench-executor-token-0123456789abcdef";
const TARGET = fileURLToPath(new URL("./target.ts", import.meta.url));

/** Whether the product knows `limits:` (agent limits); an older one refuses the key. */
function hasAgentLimits(): boolean {
  const example = path.join(productDir(), "countersign.example.yml");
  return existsSync(example) && /^limits:/m.test(readFileSync(example, "utf8"));
}

/** Milliseconds since the epoch with sub-millisecond resolution: comparable with the target process's clock. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** The PostgreSQL the bench may create databases on (admin connection string). */
export function benchDatabaseUrl(): string | undefined {
  return process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
}

/** Databases the bench makes are named with this prefix (`BENCH_DB_PREFIX`, default countersign_bench). */
export function databasePrefix(): string {
  const prefix = process.env.BENCH_DB_PREFIX ?? "countersign_bench";
  if (!/^[a-z_][a-z0-9_]{0,30}$/.test(prefix)) throw new Error(`BENCH_DB_PREFIX must be a lower-case SQL identifier of at most 31 characters, got '${prefix}'`);
  return prefix;
}

/** The same server, another database. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface StackOptions {
  adminUrl: string;
  /** A kept database to run on (created by the caller); default: a fresh one, dropped at stop. */
  database?: string;
  /** Resources `/contacts/1` … `/contacts/N` on the fake target. */
  contacts: number;
  /** Agents to submit as (default 1); `submit` takes which. */
  agents?: number;
}

export interface Stack {
  /** The server's base URL. */
  url: string;
  database: string;
  /** A postgres.js client on the product's database (max 10, as the product's own pool), for floors and inspection. */
  sql: postgres.Sql;
  /** The first agent's API key (`agentKeys` holds every agent's). */
  agentKey: string;
  agentKeys: string[];
  /** The fake target's base URL (its own process, bench/target.ts). */
  targetUrl: string;
  slack: SlackEmulator;
  clicks: SlackRequests;
  /** Resolves when the target receives a write to `path`, with the time it arrived (epochNow()). */
  nextWrite(path: string): Promise<number>;
  /** `POST /v1/plans` for one contact, as agent `agent` (default 0); resolves with the created plan's id and hash. */
  submit(contact: number, init?: { agent?: number }): Promise<{ id: string; hash: string }>;
  stop(): Promise<void>;
}

export function mergeBody(contact: number): string {
  return JSON.stringify({
    title: `Update contact ${contact}'s email`,
    reason: "bench: the customer asked by phone",
    actions: [
      {
        kind: "http.json",
        target: "crm",
        path: `/contacts/${contact}`,
        op: "merge",
        body: { email: `c${contact}-${randomBytes(3).toString("hex")}@new.example` },
      },
    ],
  });
}

/** What startProduct starts: the product's processes and what they talk to, for a stack to build on. */
export interface ProductOptions {
  adminUrl: string;
  /** A kept database to run on (created by the caller); default: a fresh one, dropped at stop. */
  database?: string;
  /** A word in the fresh database's name, so a left-over one says which stack made it. */
  label: string;
  /** Resources `/contacts/1` … `/contacts/N` on the fake target. */
  contacts: number;
  /** Started here and stopped at stop. */
  slack: SlackEmulator;
  /** More top-level countersign.yml lines (after the environment, Slack channel, approvers and the `crm` target). */
  config?: string[];
  /** The `limits:` value, written only where the product knows agent limits. */
  limits?: string;
  /** `countersign serve` processes on the one database (default 1). */
  replicas?: number;
  /** Agents to add by name, in this order. */
  agents: string[];
  /** Whether to start `countersign executor` too. */
  executor: boolean;
  /** The pool size of the `sql` client. */
  sqlMax: number;
  /** Called for every write the target receives, with when it arrived (epochNow()). */
  onWrite?: (path: string, at: number) => void;
}

export interface Product {
  /** One base URL per `serve`. */
  urls: string[];
  database: string;
  sql: postgres.Sql;
  /** Agent name → API key. */
  keys: Map<string, string>;
  targetUrl: string;
  /** Stops every process, drops a fresh database, stops the Slack emulator and removes the config. */
  stop(): Promise<void>;
}

/**
 * Countersign as users run it on a PostgreSQL database: its countersign.yml, the fake target in
 * its own process, `serve` (× replicas, one after the other: the first migrates, the next find
 * the schema current), the agents and, if asked, the executor.
 */
export async function startProduct(options: ProductOptions): Promise<Product> {
  const cli = countersignCommand();
  const dir = mkdtempSync(path.join(os.tmpdir(), `countersign-bench-${options.label}-`));
  const owned = options.database === undefined;
  const database = options.database ?? `${databasePrefix()}_${options.label}_${randomBytes(6).toString("hex")}`;
  const admin = postgres(options.adminUrl, { onnotice: () => {}, max: 1 });
  const slack = options.slack;
  let target: ChildProcess | undefined;
  const processes: Started[] = [];
  let sql: postgres.Sql | undefined;
  const stop = async () => {
    for (const p of processes.reverse()) await p.stop();
    await sql?.end({ timeout: 5 });
    if (owned) await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end({ timeout: 5 });
    if (target?.connected) {
      const exited = new Promise((r) => target!.once("exit", r));
      target.disconnect();
      await exited;
    }
    await slack.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (owned) await admin.unsafe(`CREATE DATABASE ${database}`);
    target = fork(TARGET, [String(options.contacts), READ_TOKEN, WRITE_TOKEN], {
      execArgv: ["--import", import.meta.resolve("tsx")],
      env: cleanEnv(),
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const targetUrl = await new Promise<string>((resolve, reject) => {
      target!.once("exit", (code) => reject(new Error(`bench/target.ts exited (${code}) before it listened`)));
      target!.on("message", (m: { url?: string; write?: string; at?: number }) => {
        if (m.url) resolve(m.url);
        if (m.write) options.onWrite?.(m.write, m.at!);
      });
    });
    await slack.start();
    writeFileSync(
      path.join(dir, "countersign.yml"),
      [
        "environment: bench",
        `slack: { reviewChannel: ${REVIEW_CHANNEL} }`,
        `defaults: { approvers: [${APPROVER}] }`,
        ...crmTargetYaml(targetUrl, { write: true, allowMerges: true }),
        ...(options.config ?? []),
        ...(options.limits !== undefined && hasAgentLimits() ? [`limits: ${options.limits}`] : []),
      ].join("\n"),
    );
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const dbUrl = databaseUrl(options.adminUrl, database);
    const common = { COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"), COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN, CRM_READ: READ_TOKEN };
    const serverEnv = (port: number) =>
      cleanEnv({
        ...common,
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
    // BENCH_SERVE_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the server under a figure's work.
    const serveNodeArgs = process.env.BENCH_SERVE_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
    const ports: number[] = [];
    for (let r = 0; r < (options.replicas ?? 1); r++) {
      const port = await freePort();
      processes.push(
        await startUntilReady([...serveNodeArgs, ...cli.args, "serve"], { cwd: dir, env: serverEnv(port), ready: /countersign serving/, timeoutMs: 300_000 }),
      );
      ports.push(port);
    }
    const urls = ports.map((port) => `http://127.0.0.1:${port}`);
    // Added once serve migrated, so `agents add` never races a migration; four at a time (each a
    // CLI process of its own, about a second apiece on a loaded machine).
    const keys = new Map<string, string>();
    for (let i = 0; i < options.agents.length; i += 4) {
      const added = await Promise.all(
        options.agents.slice(i, i + 4).map((name) => outputOf([...cli.args, "agents", "add", name], { cwd: dir, env: serverEnv(ports[0]!) })),
      );
      added.forEach((out, j) => {
        keys.set(options.agents[i + j]!, out.trimEnd().split("\n").at(-1)!);
      });
    }
    if (options.executor) {
      // BENCH_EXECUTOR_NODE_ARGS: the same for the executor (e.g. --cpu-prof under approve-to-patch).
      const executorNodeArgs = process.env.BENCH_EXECUTOR_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
      processes.push(
        await startUntilReady([...executorNodeArgs, ...cli.args, "executor"], {
          cwd: dir,
          env: cleanEnv({
            ...common,
            LOG_LEVEL: "info",
            COUNTERSIGN_URL: urls[0]!,
            CRM_WRITE: WRITE_TOKEN,
            COUNTERSIGN_GRANT_PUBLIC_KEY: publicKey.export({ type: "spki", format: "pem" }).toString(),
          }),
          ready: /executor running/,
          timeoutMs: 300_000,
        }),
      );
    }
    sql = postgres(dbUrl, { onnotice: () => {}, max: options.sqlMax });
    return { urls, database, sql, keys, targetUrl, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const slack = new SlackEmulator();
  const waiting = new Map<string, (at: number) => void>();
  // Random names: a kept database already holds the agents of earlier runs.
  const agents = Array.from({ length: options.agents ?? 1 }, () => `bench-${randomBytes(4).toString("hex")}`);
  const product = await startProduct({
    adminUrl: options.adminUrl,
    ...(options.database !== undefined ? { database: options.database } : {}),
    label: "stack",
    contacts: options.contacts,
    slack,
    // The agent limits (where the product has them) are checked as always, with bounds no figure reaches.
    limits: "{ plansPerMinute: 1000000, maxPending: 1000000 }",
    agents,
    executor: true,
    sqlMax: 10,
    onWrite: (p, at) => waiting.get(p)?.(at),
  });
  const trim = setInterval(() => {
    slack.calls.length = 0;
  }, 5_000);
  trim.unref();
  const url = product.urls[0]!;
  const agentKeys = agents.map((name) => product.keys.get(name)!);
  return {
    url,
    database: product.database,
    sql: product.sql,
    agentKey: agentKeys[0]!,
    agentKeys,
    targetUrl: product.targetUrl,
    slack,
    clicks: new SlackRequests({ baseUrl: url, signingSecret: SIGNING_SECRET }),
    nextWrite: (p) =>
      new Promise((resolve) =>
        waiting.set(p, (at) => {
          waiting.delete(p);
          resolve(at);
        }),
      ),
    async submit(contact, init = {}) {
      const key = agentKeys[init.agent ?? 0];
      if (!key) throw new Error(`bench: no agent ${init.agent}; the stack has ${agentKeys.length}`);
      const res = await fetch(`${url}/v1/plans`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: mergeBody(contact),
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`POST /v1/plans answered ${res.status}: ${text.slice(0, 500)}`);
      const plan = JSON.parse(text) as { id: string; hash: string };
      return { id: plan.id, hash: plan.hash };
    },
    stop: async () => {
      clearInterval(trim);
      await product.stop();
    },
  };
}

/** Sends the Approve click Slack would send for this plan (a signed `block_actions` POST); resolves with the HTTP status once acked. */
export async function clickApprove(stack: Stack, plan: { id: string; hash: string }): Promise<number> {
  const res = await stack.clicks.blockAction({
    user: APPROVER,
    actionId: "approve",
    value: JSON.stringify({ planId: plan.id, hash: plan.hash }),
    channelId: REVIEW_CHANNEL,
    messageTs: "1733140000.000100",
  });
  await res.arrayBuffer();
  return res.status;
}

/** Waits until `check` is true, polling every `everyMs`; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 300_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: gave up waiting for ${what} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Outbox rows still to deliver (Slack posts, updates, thread replies): 0 once the product is quiet. */
export async function undelivered(sql: postgres.Sql): Promise<number> {
  const [row] = await sql`SELECT count(*)::int AS n /* bench-probe */ FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL`;
  return row!.n as number;
}

/** The plan's status as its agent sees it (`GET /v1/plans/:id`). */
export async function planStatus(stack: Stack, id: string): Promise<string> {
  const res = await fetch(`${stack.url}/v1/plans/${id}`, { headers: { authorization: `Bearer ${stack.agentKey}` } });
  const body = (await res.json()) as { status?: string };
  if (res.status !== 200 || !body.status) throw new Error(`GET /v1/plans/${id} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return body.status;
}
