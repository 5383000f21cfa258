#!/usr/bin/env node
import { ConfigError, loadConfig, type Config } from "./config/load.ts";
import { agentsCommand } from "./cli/agents.ts";
import { demoAgentKey, demoConfig, demoCurl, DEMO_REVIEWER, startDemoTarget } from "./demo/demo.ts";
import { createLogger } from "./logger.ts";
import { runServer } from "./server/run-server.ts";
import { ServiceError } from "./service/errors.ts";
import { openDatabase } from "./store/db.ts";

const HELP = `countersign — agents propose, people countersign, a separate executor applies.

Usage:
  countersign start                 the embedded default: server on PGlite (./.countersign) + a demo target
  countersign serve                 the server: agent API, expiry sweeper, outbox (DATABASE_URL or PGlite)
  countersign migrate               apply database migrations and exit
  countersign agents add NAME       create an agent; its API key is the last line printed
  countersign agents list           list agents
  countersign agents revoke NAME    revoke an agent's key

Environment: PORT (3000), PUBLIC_URL, DATABASE_URL (absent: embedded PGlite in
COUNTERSIGN_DATA_DIR, default ./.countersign), COUNTERSIGN_CONFIG (default ./countersign.yml),
LOG_LEVEL. See countersign.example.yml for the config file.`;

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
    case "agents":
      await agentsCommand(loadConfig({ env: process.env, role: "cli" }), args, out);
      return 0;
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

/** `countersign start`: the whole flow on one machine with nothing configured. */
async function start(out: (line: string) => void): Promise<number> {
  const probe = loadConfig({ env: process.env, role: "server" });
  const useDemo = probe.configPath === null;
  const demo = useDemo ? await startDemoTarget() : undefined;
  const env = demo ? { ...process.env, COUNTERSIGN_DEMO_READ_TOKEN: demo.readToken, COUNTERSIGN_DEMO_WRITE_TOKEN: demo.writeToken } : process.env;
  const config = loadConfig({ env, role: "server", ...(demo ? { fallback: demoConfig(demo.target.url) } : {}) });
  const logger = createLogger(config.logLevel === "info" ? "warn" : config.logLevel);
  const server = await runServer({ config, logger }).catch(async (err: unknown) => {
    await demo?.target.stop();
    throw err;
  });

  out("");
  out(`Countersign is running — ${config.publicUrl}  (${config.database.kind === "pglite" ? `embedded PGlite in ${config.database.dataDir}` : "PostgreSQL"})`);
  out(`  environment: ${config.environment}   targets: ${Object.keys(config.targets).join(", ") || "(none)"}`);
  if (demo) {
    const key = await demoAgentKey(server.ctx.database, config.dataDir);
    out(`  demo target: contacts at ${demo.target.url} (a JSON contacts API with ETags)`);
    out(`  demo reviewer: ${DEMO_REVIEWER} (may approve plans for 'contacts')`);
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
    await server.close();
    await demo?.target.stop();
  });
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
    else process.stderr.write(`countersign: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  },
);
