// Every command the dispatcher (src/cli.ts) knows, with the usage its `--help` prints. This file
// stays light: `--help` reads it without loading a command, and each `run` imports its own.
import type { EnvReader } from "./env-help.ts";

/** An option as parseArgs takes it, with what its usage says about it. */
export interface OptionSpec {
  type: "string" | "boolean";
  /** May be given more than once; its values come as a list. */
  multiple?: boolean;
  /** The value's placeholder in the usage (FILE, NAME …). */
  value?: string;
  says: string;
}

export interface ArgumentSpec {
  name: string;
  optional?: boolean;
  says: string;
}

/** What a command runs with: its options and arguments as the dispatcher parsed and checked them. */
export interface CommandInput {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  /** The arguments after the command's name, as given. */
  args: string[];
  env: NodeJS.ProcessEnv;
  out: (line: string) => void;
}

export interface Command {
  /** Its words after `countersign`: "agents revoke". */
  name: string;
  /** One line: what it does, in the overview and at the top of its usage. */
  summary: string;
  /** What its usage adds below the summary. */
  about?: string;
  /** The usage lines after the name, where the options alone do not tell which are required or go together. */
  synopsis?: string[];
  arguments?: ArgumentSpec[];
  options?: Record<string, OptionSpec>;
  /** The environment variables its usage lists (from the env schema), as this reader uses them. */
  env?: EnvReader;
  /** Each an invocation after `countersign`. */
  examples: string[][];
  run(input: CommandInput): Promise<number>;
}

/** A command whose first argument names one of its subcommands. */
export interface CommandGroup {
  name: string;
  summary: string;
  subcommands: Command[];
}

const loadConfig = async () => (await import("../config/load.ts")).loadConfig;
const cliConfig = async (env: NodeJS.ProcessEnv) => (await loadConfig())({ env, role: "cli" });

/**
 * What every long-running command sets up before it starts anything: it outlives a query the
 * database driver abandons when a connection drops, and listens for Ctrl-C (stop-signals.ts).
 */
async function longRunning() {
  (await import("./database-disconnects.ts")).surviveDatabaseDisconnects();
  return (await import("./stop-signals.ts")).catchStopSignals();
}

const string = (value: string, says: string): OptionSpec => ({ type: "string", value, says });
const text = (v: string | boolean | string[] | undefined) => (typeof v === "string" ? v : undefined);

/** `doctor`, and `policy check --role`: one code path, so both print the same lines. */
const doctor = async ({ values, positionals, env, out }: CommandInput) =>
  (await import("./doctor.ts")).doctor({ role: text(values.role), file: positionals[0], env, out });

const agentsDatabase = "On DATABASE_URL, or the embedded database in COUNTERSIGN_DATA_DIR (through the server holding it, when one runs).";

export const COMMANDS: (Command | CommandGroup)[] = [
  {
    name: "start",
    summary:
      "everything on one machine: the server (on PGlite in ./.countersign, or DATABASE_URL) and one executor child process; without a config file, " +
      "on demo targets: an http.json API and, with DATABASE_URL, a postgres.row database of its own (the user needs CREATEDB and CREATEROLE)",
    about: "Listens on 127.0.0.1 only, whatever HOST says. Runs until Ctrl-C.",
    env: "start",
    examples: [["start"]],
    run: async ({ out }) => (await import("./start.ts")).start(out, await longRunning()),
  },
  {
    name: "serve",
    summary: "the server: agent API, executor API, browser, Slack, expiry sweeper, outbox",
    about: "Needs a config file (COUNTERSIGN_CONFIG, or ./countersign.yml); see countersign.example.yml. Runs until Ctrl-C or SIGTERM.",
    env: "server",
    examples: [["serve"]],
    run: async ({ env }) => {
      const signals = await longRunning();
      return (await import("./serve.ts")).serve((await loadConfig())({ env, role: "server", requireFile: true }), signals);
    },
  },
  {
    name: "executor",
    summary: "the executor: claims approved plans, verifies their grants, revalidates, applies",
    about: "The only process with write credentials. Needs a config file with a write block for every target. Runs until Ctrl-C or SIGTERM.",
    env: "executor",
    examples: [["executor"]],
    run: async ({ env }) => {
      const signals = await longRunning();
      const { startExecutor } = await import("./executor.ts");
      const { whenParentGone } = await import("./parent-watch.ts");
      const executor = await startExecutor((await loadConfig())({ env, role: "executor", requireFile: true }));
      const parentGone = whenParentGone(env);
      return signals.untilStopped(() => executor.stop(), parentGone ? Promise.race([executor.refused, parentGone]) : executor.refused);
    },
  },
  {
    name: "doctor",
    summary: "check what serve or the executor needs before it starts: one line each, ✓, or ✗ with the fix",
    about:
      "Loads the config exactly as that process would, with this environment, and checks its variables (and that it holds none it must not), " +
      "then as the server: the database reachable and migrated, Slack's token and channels, each target readable and a postgres.row read role that writes nothing; " +
      "as the executor: the server at COUNTERSIGN_URL, its executor token and grant key, each target readable and a postgres.row write role holding exactly what allow names. " +
      "It only reads: nothing is migrated, claimed or written. A check over the network gives up after 5 s. Exit 1 on any ✗.",
    synopsis: ["--role server|executor [CONFIG]"],
    arguments: [{ name: "CONFIG", optional: true, says: "the config file (default: COUNTERSIGN_CONFIG, else ./countersign.yml)" }],
    options: { role: string("server|executor", "check as this process (required)") },
    examples: [
      ["doctor", "--role", "server"],
      ["doctor", "--role", "executor", "countersign.yml"],
    ],
    run: doctor,
  },
  {
    name: "keys",
    summary: "signing keys",
    subcommands: [
      {
        name: "keys generate",
        summary: "print a new Ed25519 key pair for signing grants (or audit seals)",
        about: "Prints the private key for the server and the public key for executors (or for whoever checks published seals). Writes no file.",
        options: { "audit-seal": { type: "boolean", says: "a separate pair for signing audit seals (COUNTERSIGN_AUDIT_SEAL_KEY), never the grant key" } },
        examples: [
          ["keys", "generate"],
          ["keys", "generate", "--audit-seal"],
        ],
        run: async ({ values, out }) => {
          const keys = await import("./keys.ts");
          await (values["audit-seal"] ? keys.auditSealKeysGenerate : keys.keysGenerate)(out);
          return 0;
        },
      },
    ],
  },
  {
    name: "migrate",
    summary: "apply database migrations (under an advisory lock) and exit",
    env: "database",
    examples: [["migrate"]],
    run: async ({ env, out }) => (await import("./migrate.ts")).migrate(await cliConfig(env), out),
  },
  {
    name: "policy",
    summary: "configs",
    subcommands: [
      {
        name: "policy check",
        summary: "validate a config and print each target's effective policy",
        about:
          "Without --role no credential is resolved, so it runs anywhere. The file is FILE, else COUNTERSIGN_CONFIG, else ./countersign.yml. " +
          "Exit 1 naming every bad key. With --role it is 'countersign doctor --role': the same checks, the same lines.",
        arguments: [{ name: "FILE", optional: true, says: "the config to check" }],
        options: { role: string("server|executor", "run 'countersign doctor' as that process instead, with this environment (credentials and all)") },
        examples: [
          ["policy", "check", "countersign.yml"],
          ["policy", "check", "countersign.yml", "--role", "executor"],
        ],
        run: async (input) =>
          input.values.role !== undefined ? doctor(input) : (await import("./policy-check.ts")).policyCheck(input.args, input.env, input.out),
      },
    ],
  },
  {
    name: "audit",
    summary: "the audit log",
    subcommands: [
      {
        name: "audit verify",
        summary: "recompute the audit log's hash chains and seals; exit 1 naming where it breaks",
        about: `With --seals and --public-key, also check them against the signed seals published outside the database. ${agentsDatabase}`,
        synopsis: ["[--seals FILE --public-key PEM_FILE]"],
        options: {
          seals: string("FILE", "the signed seals published outside the database (JSON Lines)"),
          "public-key": string("PEM_FILE", "the public key of COUNTERSIGN_AUDIT_SEAL_KEY, as a file or the PEM itself"),
        },
        env: "database",
        examples: [
          ["audit", "verify"],
          ["audit", "verify", "--seals", "seals.jsonl", "--public-key", "audit-seal.pub.pem"],
        ],
        run: async ({ values, env, out }) =>
          (await import("./audit.ts")).auditVerify(await cliConfig(env), { seals: text(values.seals), publicKey: text(values["public-key"]) }, out),
      },
      {
        name: "audit export",
        summary: "the audit trail as JSON Lines, for a SIEM",
        about: agentsDatabase,
        synopsis: ["--since ISO_TIME [--out FILE]"],
        options: {
          since: string("ISO_TIME", "the first moment to export, e.g. 2026-01-31T00:00:00Z (required)"),
          out: string("FILE", "write to this file instead of standard output"),
        },
        env: "database",
        examples: [["audit", "export", "--since", "2026-01-31T00:00:00Z", "--out", "audit.jsonl"]],
        run: async ({ values, env, out }) =>
          (await import("./audit.ts")).auditExport(await cliConfig(env), { since: text(values.since), outFile: text(values.out) }, out),
      },
    ],
  },
  {
    name: "agents",
    summary: "the agents that propose plans",
    subcommands: [
      {
        name: "agents add",
        summary: "create an agent; its API key is the last line printed",
        about: `Also prints its webhook signing secret. The key is shown once. ${agentsDatabase}`,
        arguments: [{ name: "NAME", says: "the agent's name: lower-case letters, digits, '-' and '_'" }],
        env: "database",
        examples: [["agents", "add", "billing-bot"]],
        run: async ({ positionals, env, out }) => (await import("./agents.ts")).agentsCommand(await cliConfig(env), "add", positionals[0], out),
      },
      {
        name: "agents list",
        summary: "list agents, active and revoked",
        about: agentsDatabase,
        env: "database",
        examples: [["agents", "list"]],
        run: async ({ env, out }) => (await import("./agents.ts")).agentsCommand(await cliConfig(env), "list", undefined, out),
      },
      {
        name: "agents revoke",
        summary: "revoke an agent's key: it stops working at once",
        about: agentsDatabase,
        arguments: [{ name: "NAME", says: "the agent to revoke" }],
        env: "database",
        examples: [["agents", "revoke", "billing-bot"]],
        run: async ({ positionals, env, out }) => (await import("./agents.ts")).agentsCommand(await cliConfig(env), "revoke", positionals[0], out),
      },
    ],
  },
  {
    name: "pause",
    summary: "the kill switch: no executor takes a plan until resume (--status shows whether it is paused)",
    about:
      "Plans executing now finish; agents still submit and people still decide. Who paused is the operating-system user unless --by names someone. " +
      agentsDatabase,
    synopsis: ['--reason "…" [--by NAME]', "--status"],
    options: {
      reason: string('"…"', "why; reviewers and agents are told it (required to pause)"),
      by: string("NAME", "who pauses (default: the operating-system user)"),
      status: { type: "boolean", says: "print whether Countersign is paused, and change nothing" },
    },
    env: "database",
    examples: [
      ["pause", "--reason", "migrating the CRM", "--by", "ana"],
      ["pause", "--status"],
    ],
    run: async ({ values, env, out }) =>
      (await import("./pause.ts")).pauseCommand(
        await cliConfig(env),
        { reason: text(values.reason), by: text(values.by), status: values.status === true },
        out,
      ),
  },
  {
    name: "resume",
    summary: "lift the pause",
    about: agentsDatabase,
    options: { by: string("NAME", "who resumes (default: the operating-system user)") },
    env: "database",
    examples: [["resume", "--by", "ana"]],
    run: async ({ values, env, out }) => (await import("./pause.ts")).resumeCommand(await cliConfig(env), { by: text(values.by) }, out),
  },
  {
    name: "login-link",
    summary: "a one-time browser sign-in link (last line printed)",
    about: `The link starts with PUBLIC_URL, is valid for 5 minutes and usable once. ${agentsDatabase}`,
    synopsis: ["--user U… [--name NAME]"],
    options: {
      user: string("U…", "the Slack user id to sign in as (required)"),
      name: string("NAME", "the name the browser shows"),
    },
    env: "database",
    examples: [["login-link", "--user", "U024BE7LH", "--name", "Ana Lima"]],
    run: async ({ values, env, out }) =>
      (await import("./agents.ts")).loginLinkCommand(await cliConfig(env), { user: text(values.user), name: text(values.name) }, out),
  },
  {
    name: "delegate",
    summary: "someone decides in another's place while they are away, until the end of a day; or list and end delegations",
    about:
      "The delegate may approve, reject, revoke and edit wherever the delegator may, and gets their reminders; a target whose policy says delegation: false is left to its approvers. " +
      "The day ends at midnight in the delegator's Slack time zone when a running server holding the data dir is asked (and it checks the delegate is a person); otherwise in UTC. At most 90 days ahead. " +
      "Who did it is the operating-system user unless --by names someone; it is on the audit log. " +
      agentsDatabase,
    synopsis: ["--from U… --to U… --until YYYY-MM-DD [--target NAME]…", "list [--all]", "end ID"],
    arguments: [
      { name: "list|end", optional: true, says: "list the delegations in force, or end one (none: make one)" },
      { name: "ID", optional: true, says: "the delegation to end, as 'delegate list' shows it" },
    ],
    options: {
      from: string("U…", "the Slack user id of the person away"),
      to: string("U…", "the Slack user id of the person who decides in their place"),
      until: string("YYYY-MM-DD", "the last day the delegation holds"),
      target: { type: "string", multiple: true, value: "NAME", says: "only plans on this target (repeat it for more; none: every target)" },
      all: { type: "boolean", says: "with list: those that ended or ran out too" },
      by: string("NAME", "who does it (default: the operating-system user)"),
    },
    env: "database",
    examples: [
      ["delegate", "--from", "U024BE7LH", "--to", "U0G9QF9C6", "--until", "2026-12-20"],
      ["delegate", "--from", "U024BE7LH", "--to", "U0G9QF9C6", "--until", "2026-12-20", "--target", "crm"],
      ["delegate", "list"],
      ["delegate", "end", "6f1c7f1e-4a1b-4c1d-8e1f-0a1b2c3d4e5f"],
    ],
    run: async ({ values, positionals, env, out }) =>
      (await import("./delegate.ts")).delegateCommand(
        await cliConfig(env),
        {
          verb: positionals[0],
          id: positionals[1],
          from: text(values.from),
          to: text(values.to),
          until: text(values.until),
          targets: Array.isArray(values.target) ? values.target : [],
          all: values.all === true,
          by: text(values.by),
        },
        out,
      ),
  },
  {
    name: "mcp",
    summary: "an MCP server over stdio for agents",
    about: "Reads COUNTERSIGN_URL (the server) and COUNTERSIGN_AGENT_KEY (from 'countersign agents add'). Runs until its client closes stdin.",
    examples: [["mcp"]],
    run: async ({ env }) => (await import("../mcp/mcp-server.ts")).runMcpServer(env),
  },
];

export const isGroup = (command: Command | CommandGroup): command is CommandGroup => "subcommands" in command;

/** Every command a person can run, subcommands in place of their group. */
export function leafCommands(): Command[] {
  return COMMANDS.flatMap((c) => (isGroup(c) ? c.subcommands : [c]));
}
