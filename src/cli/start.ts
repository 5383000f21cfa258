import { spawn, type ChildProcess } from "node:child_process";
import { createPublicKey, randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify as stringifyYaml } from "yaml";
import { ConfigError, loadConfig, type ServerConfig } from "../config/load.ts";
import { demoAgentKey, demoConfig, demoCurl, demoLookCurl, DEMO_REVIEWER, startDemoTarget } from "../demo/demo.ts";
import type { JsonResourceServer } from "../demo/json-resource-server.ts";
import { PG_DEMO_ENV, PG_DEMO_HINT, PG_DEMO_TARGET, postgresRowDemoCurl, postgresRowLookCommand } from "../demo/postgres-row-demo.ts";
import type { ProvisionResult } from "../demo/provision-postgres-row-demo.ts";
import { createLogger } from "../logging/logger.ts";
import { resolveGrantKey } from "../server/grant-key.ts";
import { runServer } from "../server/run-server.ts";
import { createLoginLink } from "../service/sign-in/index.ts";
import { PARENT_PID_ENV } from "./parent-watch.ts";
import type { StopSignals } from "./stop-signals.ts";

/**
 * `countersign start`: the whole flow on one machine with nothing configured: the server on
 * PGlite (or DATABASE_URL), demo targets (a JSON API; with PostgreSQL also a database of its own,
 * for postgres.row), and one executor child process. The server's config resolves no write
 * credential and the executor's does, but this one process holds them all the same (it hands the
 * executor its environment, runs the demo targets and provisions the demo database as
 * DATABASE_URL's user, who owns it), and the banner says so: the separation holds only when
 * `serve` and `executor` run apart.
 * If the executor dies, so does `start` (exit 1, naming why): approved plans would otherwise wait
 * for an executor that is not coming, while the banner above still says it runs. A restart loop
 * would hide a config the executor cannot run on behind the same message every few seconds.
 */
export async function start(out: (line: string) => void, signals: StopSignals): Promise<number> {
  const probe = loadConfig({ env: process.env, role: "server" });
  if (probe.configPath !== null) return run(out, signals, process.env, undefined);
  const demo = await startDemo(probe.dataDir, probe.database);
  try {
    // The demo config is a file, so the executor child reads the same one. Credentials stay in
    // the environment: the server's gets the read ones, only the executor's the write ones.
    mkdirSync(probe.dataDir, { recursive: true });
    const file = path.join(probe.dataDir, "demo-config.yml");
    writeFileSync(
      file,
      "# Written by `countersign start` for its demo targets; rewritten at every start.\n" +
        stringifyYaml(demoConfig(demo.target.url, { rows: demo.rows?.ok })),
    );
    const rows = demo.rows?.ok ? demo.rows.demo : undefined;
    const env = {
      ...process.env,
      COUNTERSIGN_CONFIG: file,
      COUNTERSIGN_DEMO_READ_TOKEN: demo.readToken,
      ...(rows ? { [PG_DEMO_ENV.read]: rows.readUrl } : {}),
    };
    return await run(out, signals, env, demo);
  } catch (err) {
    await demo.target.stop();
    throw err;
  }
}

interface Demo {
  target: JsonResourceServer;
  readToken: string;
  writeToken: string;
  /** The postgres.row demo: provisioned, or why not; undefined on the embedded database. */
  rows: ProvisionResult | undefined;
}

/** The http.json demo target, and with PostgreSQL the postgres.row demo database beside it (set up meanwhile). */
async function startDemo(dataDir: string, database: ServerConfig["database"]): Promise<Demo> {
  const rows =
    database.kind === "postgres"
      ? import("../demo/provision-postgres-row-demo.ts").then(({ provisionPostgresRowDemo }) => provisionPostgresRowDemo(database.url, dataDir))
      : Promise.resolve(undefined);
  const [http, provisioned] = await Promise.allSettled([startDemoTarget(dataDir), rows]);
  if (http.status === "rejected") throw http.reason;
  if (provisioned.status === "rejected") {
    await http.value.target.stop();
    throw provisioned.reason;
  }
  return { ...http.value, rows: provisioned.value };
}

async function run(out: (line: string) => void, signals: StopSignals, env: NodeJS.ProcessEnv, demo: Demo | undefined): Promise<number> {
  const executorToken = process.env.COUNTERSIGN_EXECUTOR_TOKEN || randomBytes(32).toString("base64url");
  const config = loadConfig({ env: { ...env, COUNTERSIGN_EXECUTOR_TOKEN: executorToken }, role: "server" });
  const childLogLevel = config.logLevel === "info" ? "warn" : config.logLevel;
  const logger = createLogger(childLogLevel);
  const grant = await resolveGrantKey(config);
  // The public half of the key this process signs with, unless given (during a rotation, the old and the new one).
  const publicKey = process.env.COUNTERSIGN_GRANT_PUBLIC_KEY || (createPublicKey(grant.key.key).export({ type: "spki", format: "pem" }) as string);
  const executorEnv = {
    ...env,
    ...(demo ? { COUNTERSIGN_DEMO_WRITE_TOKEN: demo.writeToken } : {}),
    ...(demo?.rows?.ok ? { [PG_DEMO_ENV.write]: demo.rows.demo.writeUrl } : {}),
    COUNTERSIGN_EXECUTOR_TOKEN: executorToken,
    COUNTERSIGN_GRANT_PUBLIC_KEY: publicKey,
    LOG_LEVEL: childLogLevel,
  };
  // The executor's config is checked here, before anything starts, so a target without a write
  // block is one clear error now rather than a child that dies after the banner. The view is
  // dropped at once: the server keeps no resolved write credential (the child resolves its own).
  try {
    loadConfig({ env: { ...executorEnv, COUNTERSIGN_URL: config.publicUrl }, role: "executor" });
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`the executor that 'start' runs, ${config.configPath ?? "built-in defaults"}`, err.problems);
    throw err;
  }

  // The embedded default is for one person on one machine: loopback only, whatever HOST says.
  const server = await runServer({ config, logger, grantKey: grant.key, hostname: "127.0.0.1" });
  const executor = spawnExecutor({ ...executorEnv, COUNTERSIGN_URL: server.url });

  out("");
  out(`Countersign is running — ${config.publicUrl}  (${config.database.kind === "pglite" ? `embedded PGlite in ${config.database.dataDir}` : "PostgreSQL"})`);
  out(`  environment: ${config.environment}   targets: ${Object.keys(config.targets).join(", ") || "(none)"}`);
  out(`  executor: pid ${executor.child.pid} (applies approved plans; the server's config resolves no write credential, the executor's does)`);
  out(`  one process: 'start' ${startHolds(demo)}, so it could write too; run 'serve' and 'executor' apart to keep write credentials out of the server`);
  out("  run apart: 'countersign doctor --role server' (or --role executor) checks each one's config, credentials and connections first");
  if (demo) {
    const key = await demoAgentKey(server.ctx, config.dataDir, config.database);
    const rows = demo.rows?.ok ? demo.rows.demo : undefined;
    out(`  demo target: contacts at ${demo.target.url} (a JSON contacts API with ETags; kept in ${config.dataDir})`);
    if (rows)
      out(
        `  demo target: ${PG_DEMO_TARGET}, table contacts of the PostgreSQL database "${rows.database}" (postgres.row; previews read as ${rows.readRole}, which may only SELECT; the executor writes as ${rows.writeRole})`,
      );
    else if (demo.rows?.ok === false) out(`  postgres.row demo: not set up, ${demo.rows.reason}; only the http.json demo runs`);
    else out(`  ${PG_DEMO_HINT}`);
    out(
      `  demo reviewer: ${DEMO_REVIEWER} (may approve plans for ${Object.keys(config.targets)
        .map((t) => `'${t}'`)
        .join(" and ")})`,
    );
    if (config.browser.loginLinks) {
      const link = await createLoginLink(server.ctx, { userId: DEMO_REVIEWER, name: "Demo Reviewer", via: "cli" });
      out(`  review in the browser: ${config.publicUrl}/plans — sign in as the demo reviewer (one-time, 5 min):`);
      out(`    ${link.url}`);
    }
    out("");
    if (key) {
      out("Propose a change as the demo agent:");
      out(`  ${demoCurl(config.publicUrl, key)}`);
      if (rows) {
        out(`Or a change to a database row (postgres.row, target '${PG_DEMO_TARGET}'):`);
        out(`  ${postgresRowDemoCurl(config.publicUrl, key)}`);
      }
      out("Then follow it (replace ID with the plan id from the answer):");
      out(`  curl -s '${config.publicUrl}/v1/plans/ID/wait?timeout=30' -H 'Authorization: Bearer ${key}'`);
    } else {
      out("The demo agent's key was lost; create another with: countersign agents add my-agent");
    }
    out("Look at the target itself (read-only), before and after the change is applied:");
    out(`  ${demoLookCurl(demo.target.url, demo.readToken)}`);
    if (rows) out(`  ${postgresRowLookCommand(rows.readUrl)}`);
  }
  out("");
  out("Ctrl-C stops everything.");
  return signals.untilStopped(async () => {
    await executor.stop();
    await server.close();
    await demo?.target.stop();
  }, executor.died);
}

/** What this process holds besides the server's config: the executor's environment, and with the demo its targets. */
function startHolds(demo: Demo | undefined): string {
  if (!demo) return "hands the executor its own environment, write credentials included";
  const holds = [
    "hands the executor the demo's write credentials",
    "runs the http.json demo target",
    ...(demo.rows?.ok ? ["owns the demo database (as DATABASE_URL's user)"] : []),
  ];
  return `${holds.slice(0, -1).join(", ")} and ${holds.at(-1)}`;
}

/** The executor as a child process with an environment of its own; `died` settles if it exits before `stop()`. */
function spawnExecutor(env: NodeJS.ProcessEnv): { child: ChildProcess; died: Promise<string>; stop(): Promise<void> } {
  // The same entry point and Node options this process runs with: dist/cli.js when installed,
  // the sources under tsx's loader during development.
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, "executor"], {
    env: { ...env, [PARENT_PID_ENV]: String(process.pid) },
    stdio: ["ignore", "inherit", "inherit"],
  });
  let stopping = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const died = new Promise<string>((resolve) => {
    void exited.then(({ code, signal }) => {
      if (stopping) return;
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      resolve(
        `the executor (pid ${child.pid}) ${how}; without it no approved plan is applied, so Countersign stops too. Its own error, if any, is printed above`,
      );
    });
  });
  return {
    child,
    died,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
