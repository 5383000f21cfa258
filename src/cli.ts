#!/usr/bin/env node
// Each command imports what it uses when it runs: `--help`, `keys generate`, `policy check` and
// `mcp` (started once per agent session) must not pay for Bolt, the database drivers or the server.

import { parseArgs } from "node:util";
import { COMMANDS, isGroup, type Command } from "./cli/commands.ts";
import { commandUsage, groupUsage, overview } from "./cli/usage.ts";

const HELP_FLAGS = new Set(["-h", "--help"]);

/**
 * `-h` or `--help` anywhere before a `--` prints the usage of the command it follows and runs
 * nothing: no config read, no database opened, nothing written. Otherwise the command's options
 * and arguments are checked against its spec (src/cli/commands.ts) before it is imported.
 */
async function main(argv: string[]): Promise<number> {
  const out = (line: string) => process.stdout.write(line + "\n");
  const end = argv.includes("--") ? argv.indexOf("--") : argv.length;
  let help = argv.slice(0, end).some((a) => HELP_FLAGS.has(a));
  let words = argv.filter((a, i) => i >= end || !HELP_FLAGS.has(a));
  if (words[0] === "help") {
    help = true;
    words = words.slice(1);
  }
  const [name, ...rest] = words;
  if (name === undefined) {
    out(overview());
    return help ? 0 : 2;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) return usageError(`countersign: unknown command '${name}'; 'countersign --help' lists the commands`);

  let leaf: Command;
  let args: string[];
  if (isGroup(command)) {
    const sub = command.subcommands.find((s) => s.name === `${name} ${rest[0]}`);
    if (!sub) {
      if (help && (rest[0] === undefined || rest[0].startsWith("-"))) {
        out(groupUsage(command));
        return 0;
      }
      const verbs = command.subcommands.map((s) => s.name.slice(name.length + 1)).join(", ");
      const problem = rest[0] === undefined ? `name one of ${verbs}` : `unknown subcommand '${rest[0]}' (there are ${verbs})`;
      return usageError(`countersign ${name}: ${problem}; 'countersign ${name} --help' shows them`);
    }
    leaf = sub;
    args = rest.slice(1);
  } else {
    leaf = command;
    args = rest;
  }
  if (help) {
    out(await commandUsage(leaf));
    return 0;
  }

  const seeHelp = `'countersign ${leaf.name} --help' shows its usage`;
  let parsed: { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] };
  try {
    const options = Object.fromEntries(
      Object.entries(leaf.options ?? {}).map(([key, o]) => [key, { type: o.type, ...(o.multiple ? { multiple: true } : {}) }]),
    );
    // Only string options are ever given `multiple` (OptionSpec), so a list holds strings.
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    return usageError(`countersign ${leaf.name}: ${parseProblem(err)}; ${seeHelp}`);
  }
  const expected = leaf.arguments ?? [];
  const { positionals } = parsed;
  if (positionals.length > expected.length) return usageError(`countersign ${leaf.name}: unexpected argument '${positionals[expected.length]}'; ${seeHelp}`);
  const missing = expected.slice(positionals.length).find((a) => !a.optional);
  if (missing) return usageError(`countersign ${leaf.name}: ${missing.name} is missing; ${seeHelp}`);
  return leaf.run({ ...parsed, args, env: process.env, out });
}

/** parseArgs's complaint as one clause: which option, and what is wrong with it. */
function parseProblem(err: unknown): string {
  const { code, message } = err as { code?: string; message: string };
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option '${/'([^']+)'/.exec(message)?.[1] ?? message}'`;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const first = message.split("\n")[0]!.replace(/\.$/, "");
    return first.charAt(0).toLowerCase() + first.slice(1);
  }
  throw err;
}

function usageError(line: string): number {
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
