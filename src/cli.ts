#!/usr/bin/env node
// Each command imports what it uses when it runs: `--help`, `keys generate`, `policy check` and
// `mcp` (started once per agent session) must not pay for Bolt, the database drivers or the server.

const HELP = `countersign — agents propose, people countersign, a separate executor applies.

Usage:
  countersign start                 everything on one machine: the server (on PGlite in ./.countersign, or
                                    DATABASE_URL) and one executor child process; without a config file,
                                    on demo targets: an http.json API and, with DATABASE_URL, a postgres.row
                                    database of its own (the user needs CREATEDB and CREATEROLE)
  countersign serve                 the server: agent API, executor API, expiry sweeper, outbox
  countersign executor              the executor: claims approved plans, verifies, revalidates, applies
  countersign keys generate [--audit-seal]
                                    print a new Ed25519 key pair for signing grants (or audit seals)
  countersign migrate               apply database migrations and exit
  countersign policy check [FILE] [--role server|executor]
                                    validate a config and print each target's effective policy; with
                                    --role, load it as that process would (credentials and all)
  countersign audit verify [--seals FILE --public-key PEM_FILE]
                                    recompute the audit log's hash chains and seals (and check them
                                    against the signed seals published outside it); exit 1 naming where it breaks
  countersign audit export --since ISO_TIME [--out FILE]
                                    the audit trail as JSON Lines, for a SIEM
  countersign agents add NAME       create an agent; its API key is the last line printed
  countersign agents list           list agents
  countersign agents revoke NAME    revoke an agent's key
  countersign pause --reason "…" [--by NAME]
                                    the kill switch: no executor takes a plan until resume
                                    (--status shows whether it is paused)
  countersign resume [--by NAME]    lift the pause
  countersign login-link --user U… [--name NAME]
                                    a one-time browser sign-in link (last line printed)
  countersign mcp                   an MCP server over stdio for agents (COUNTERSIGN_URL, COUNTERSIGN_AGENT_KEY)

Environment: PORT (3000), HOST (serve's interface, default 0.0.0.0; start uses 127.0.0.1),
PUBLIC_URL, DATABASE_URL (absent: embedded PGlite in
COUNTERSIGN_DATA_DIR, default ./.countersign), COUNTERSIGN_CONFIG (default ./countersign.yml),
LOG_LEVEL, COUNTERSIGN_GRANT_PRIVATE_KEY, COUNTERSIGN_EXECUTOR_TOKEN and COUNTERSIGN_AUDIT_SEAL_KEY (server);
COUNTERSIGN_URL, COUNTERSIGN_EXECUTOR_TOKEN and COUNTERSIGN_GRANT_PUBLIC_KEY (executor).
serve and executor need a config file (COUNTERSIGN_CONFIG, or ./countersign.yml); see
countersign.example.yml. Only start runs without one (on its demo targets).
countersign COMMAND --help prints this and runs nothing.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const out = (line: string) => process.stdout.write(line + "\n");
  // `start --help` must print help, not start the demo (a later `--help`, e.g. a pause reason, is an argument).
  if (args[0] === "--help" || args[0] === "-h") {
    out(HELP);
    return 0;
  }
  const { env } = process;
  const loadConfig = async () => (await import("./config/load.ts")).loadConfig;
  // What every long-running command sets up before it starts anything: it outlives a query the
  // database driver abandons when a connection drops, and listens for Ctrl-C (stop-signals.ts).
  const longRunning = async () => {
    (await import("./cli/database-disconnects.ts")).surviveDatabaseDisconnects();
    return (await import("./cli/stop-signals.ts")).catchStopSignals();
  };
  switch (command) {
    case "start": {
      const signals = await longRunning();
      return (await import("./cli/start.ts")).start(out, signals);
    }
    case "serve": {
      const signals = await longRunning();
      return (await import("./cli/serve.ts")).serve((await loadConfig())({ env, role: "server", requireFile: true }), signals);
    }
    case "migrate":
      return (await import("./cli/migrate.ts")).migrate((await loadConfig())({ env, role: "cli" }), out);
    case "executor": {
      const signals = await longRunning();
      const { startExecutor } = await import("./cli/executor.ts");
      const { whenParentGone } = await import("./cli/parent-watch.ts");
      const executor = await startExecutor((await loadConfig())({ env, role: "executor", requireFile: true }));
      return signals.untilStopped(() => executor.stop(), whenParentGone(env));
    }
    case "keys":
      if (args[0] !== "generate" || (args[1] !== undefined && args[1] !== "--audit-seal") || args.length > 2)
        return usage("usage: countersign keys generate [--audit-seal]");
      await (await import("./cli/keys.ts"))[args[1] ? "auditSealKeysGenerate" : "keysGenerate"](out);
      return 0;
    case "policy":
      if (args[0] !== "check") return usage("usage: countersign policy check [FILE] [--role server|executor]");
      return (await import("./cli/policy-check.ts")).policyCheck(args.slice(1), env, out);
    case "audit":
      if (args[0] !== "verify" && args[0] !== "export")
        return usage("usage: countersign audit verify [--seals FILE --public-key PEM_FILE] | audit export --since ISO_TIME [--out FILE]");
      return (await import("./cli/audit.ts")).auditCommand((await loadConfig())({ env, role: "cli" }), args, out);
    case "login-link":
      await (await import("./cli/agents.ts")).loginLinkCommand((await loadConfig())({ env, role: "cli" }), args, out);
      return 0;
    case "agents":
      await (await import("./cli/agents.ts")).agentsCommand((await loadConfig())({ env, role: "cli" }), args, out);
      return 0;
    case "pause":
    case "resume":
      await (await import("./cli/pause.ts")).pauseCommand((await loadConfig())({ env, role: "cli" }), command, args, out);
      return 0;
    case "mcp":
      return (await import("./mcp/mcp-server.ts")).runMcpServer(env);
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

function usage(line: string): number {
  process.stderr.write(line + "\n");
  return 2;
}

/** A wrong setting or a refused request is one line naming what to fix; anything else is a fault and keeps its stack. */
async function report(err: unknown): Promise<string> {
  const known = ["ConfigError", "StartupError", "ServiceError"];
  if (err instanceof Error && known.includes(err.name)) return err.message;
  return (await import("./logging/log-redaction.ts")).printableError(err);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`countersign: ${await report(err)}\n`);
    process.exit(1);
  },
);
