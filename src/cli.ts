#!/usr/bin/env node
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stringify as stringifyYaml } from "yaml";
import { ConfigError, loadConfig, type Config } from "./config/load.ts";
import { startExecutor } from "./cli/executor.ts";
import { keysGenerate } from "./cli/keys.ts";
import { policyCheck } from "./cli/policy-check.ts";
import { resolveGrantKey } from "./server/grant-key.ts";
import { createLoginLink } from "./service/login-links.ts";
import { agentsCommand, auditVerifyCommand, loginLinkCommand } from "./cli/agents.ts";
import { demoAgentKey, demoConfig, demoCurl, DEMO_REVIEWER, startDemoTarget } from "./demo/demo.ts";
import { createLogger } from "./logger.ts";
import { printableError } from "./log-redaction.ts";
import { runServer } from "./server/run-server.ts";
import { ServiceError } from "./service/errors.ts";
import { openDatabase } from "./store/db.ts";

const HELP = `countersign — agents propose, people countersign, a separate executor applies.

Usage:
  countersign start                 the embedded default: server on PGlite (./.countersign), a demo target
                                    and one executor child process
  countersign serve                 the server: agent API, executor API, expiry sweeper, outbox
  countersign executor              the executor: claims approved plans, verifies, revalidates, applies
  countersign keys generate         print a new Ed25519 key pair for signing grants
  countersign migrate               apply database migrations and exit
  countersign policy check [FILE]   validate a config and print each target's effective policy
  countersign audit verify          recompute the audit log's hash chain; exit 1 naming where it breaks
  countersign agents add NAME       create an agent; its API key is the last line printed
  countersign agents list           list agents
  countersign agents revoke NAME    revoke an agent's key
  countersign login-link --user U… [--name NAME]
                                    a one-time browser sign-in link (last line printed)
  countersign mcp                   an MCP server over stdio for agents (COUNTERSIGN_URL, COUNTERSIGN_AGENT_KEY)

Environment: PORT (3000), HOST (serve's interface, default 0.0.0.0; start uses 127.0.0.1),
PUBLIC_URL, DATABASE_URL (absent: embedded PGlite in
COUNTERSIGN_DATA_DIR, default ./.countersign), COUNTERSIGN_CONFIG (default ./countersign.yml),
LOG_LEVEL, COUNTERSIGN_GRANT_PRIVATE_KEY and COUNTERSIGN_EXECUTOR_TOKEN (server);
COUNTERSIGN_URL, COUNTERSIGN_EXECUTOR_TOKEN and COUNTERSIGN_GRANT_PUBLIC_KEY (executor).
See countersign.example.yml for the config file.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const out = (line: string) => process.stdout.write(line + "\n");
  switch (command) {
    case "start":
      return start(out);
    case "serve":
      return serve(loadConfig({ env: process.env, role: "server" }));
    case "migrate": {
      const config = loadConfig({ env: process.env, role: "cli" });
      const database = await openDatabase(config.database);
      await database.migrate();
      await database.close();
      out(`Migrations applied (${database.kind}).`);
      return 0;
    }
    case "executor": {
      const executor = await startExecutor(loadConfig({ env: process.env, role: "executor" }));
      return untilSignal(() => executor.stop());
    }
    case "keys":
      if (args[0] !== "generate") {
        process.stderr.write("usage: countersign keys generate\n");
        return 2;
      }
      await keysGenerate(out);
      return 0;
    case "policy":
      if (args[0] !== "check") {
        process.stderr.write("usage: countersign policy check [file]\n");
        return 2;
      }
      policyCheck(args.slice(1), process.env, out);
      return 0;
    case "audit":
      if (args[0] !== "verify") {
        process.stderr.write("usage: countersign audit verify\n");
        return 2;
      }
      return auditVerifyCommand(loadConfig({ env: process.env, role: "cli" }), out);
    case "login-link":
      await loginLinkCommand(loadConfig({ env: process.env, role: "cli" }), args, out);
      return 0;
    case "agents":
      await agentsCommand(loadConfig({ env: process.env, role: "cli" }), args, out);
      return 0;
    case "mcp":
      // Loaded only here: the MCP SDK is not needed by any other command.
      return (await import("./mcp/mcp-server.ts")).runMcpServer(process.env);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      out(HELP);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`countersign: unknown command '${command}'\n\n${HELP}\n`);
      return 2;
  }
}

async function serve(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel);
  const server = await runServer({ config, logger });
  return untilSignal(() => server.close());
}

/**
 * `countersign start`: the whole flow on one machine with nothing configured: the server on
 * PGlite, a demo target, and one executor child process, the only holder of the write token.
 */
async function start(out: (line: string) => void): Promise<number> {
  const probe = loadConfig({ env: process.env, role: "server" });
  const demo = probe.configPath === null ? await startDemoTarget() : undefined;
  let env: NodeJS.ProcessEnv = process.env;
  if (demo) {
    // The demo config is a file, so the executor child reads the same one.
    mkdirSync(probe.dataDir, { recursive: true });
    const file = path.join(probe.dataDir, "demo-config.yml");
    writeFileSync(file, "# Written by `countersign start` for its demo target; rewritten at every start.\n" + stringifyYaml(demoConfig(demo.target.url)));
    env = { ...process.env, COUNTERSIGN_CONFIG: file, COUNTERSIGN_DEMO_READ_TOKEN: demo.readToken };
  }
  const executorToken = process.env.COUNTERSIGN_EXECUTOR_TOKEN || randomBytes(32).toString("base64url");
  const config = loadConfig({ env: { ...env, COUNTERSIGN_EXECUTOR_TOKEN: executorToken }, role: "server" });
  const logger = createLogger(config.logLevel === "info" ? "warn" : config.logLevel);
  const grant = await resolveGrantKey(config);
  // The embedded default is for one person on one machine: loopback only, whatever HOST says.
  const server = await runServer({ config, logger, grantKey: grant.key, hostname: "127.0.0.1" }).catch(async (err: unknown) => {
    await demo?.target.stop();
    throw err;
  });

  const publicKey = process.env.COUNTERSIGN_GRANT_PUBLIC_KEY || (grant.publicPemFile ? readFileSync(grant.publicPemFile, "utf8") : undefined);
  const executor = publicKey
    ? spawnExecutor({
        ...env,
        ...(demo ? { COUNTERSIGN_DEMO_WRITE_TOKEN: demo.writeToken } : {}),
        COUNTERSIGN_URL: server.url,
        COUNTERSIGN_EXECUTOR_TOKEN: executorToken,
        COUNTERSIGN_GRANT_PUBLIC_KEY: publicKey,
        LOG_LEVEL: config.logLevel === "info" ? "warn" : config.logLevel,
      })
    : undefined;

  out("");
  out(`Countersign is running — ${config.publicUrl}  (${config.database.kind === "pglite" ? `embedded PGlite in ${config.database.dataDir}` : "PostgreSQL"})`);
  out(`  environment: ${config.environment}   targets: ${Object.keys(config.targets).join(", ") || "(none)"}`);
  out(executor ? `  executor: pid ${executor.pid} (the only process with the write credential)` : "  executor: not started — set COUNTERSIGN_GRANT_PUBLIC_KEY to the public half of COUNTERSIGN_GRANT_PRIVATE_KEY");
  if (demo) {
    const key = await demoAgentKey(server.ctx, config.dataDir);
    out(`  demo target: contacts at ${demo.target.url} (a JSON contacts API with ETags)`);
    out(`  demo reviewer: ${DEMO_REVIEWER} (may approve plans for 'contacts')`);
    if (config.browser.loginLinks) {
      const link = await createLoginLink(server.ctx, { userId: DEMO_REVIEWER, name: "Demo Reviewer", via: "cli" });
      out(`  review in the browser: ${config.publicUrl}/plans — sign in as the demo reviewer (one-time, 5 min):`);
      out(`    ${link.url}`);
    }
    out("");
    if (key) {
      out("Propose a change as the demo agent:");
      out(`  ${demoCurl(config.publicUrl, key)}`);
      out("Then follow it (replace ID with the plan id from the answer):");
      out(`  curl -s '${config.publicUrl}/v1/plans/ID/wait?timeout=30' -H 'Authorization: Bearer ${key}'`);
    } else {
      out("The demo agent's key was lost; create another with: countersign agents add my-agent");
    }
  }
  out("");
  out("Ctrl-C stops everything.");
  return untilSignal(async () => {
    await stopChild(executor);
    await server.close();
    await demo?.target.stop();
  });
}

/** The executor as a child process with an environment of its own. */
function spawnExecutor(env: NodeJS.ProcessEnv): ChildProcess {
  // The same entry point and Node options this process runs with: dist/cli.js when installed,
  // the sources under tsx's loader during development.
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, "executor"], { env, stdio: ["ignore", "inherit", "inherit"] });
  child.on("exit", (code, signal) => {
    if (code !== 0 && signal === null) process.stderr.write(`countersign: the executor exited with code ${code}; approved plans wait until it runs again\n`);
  });
  return child;
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

function untilSignal(stop: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const onSignal = () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      stop().then(() => resolve(0), (err: unknown) => {
        process.stderr.write(`countersign: shutdown failed: ${(err as Error).message}\n`);
        resolve(1);
      });
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof ServiceError) process.stderr.write(`countersign: ${err.message}\n`);
    else process.stderr.write(`countersign: ${printableError(err)}\n`);
    process.exit(1);
  },
);
