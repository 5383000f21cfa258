// What `countersign --help` and each command's `--help` print, made from the command table.
import { leafCommands, type Command, type CommandGroup } from "./commands.ts";

const WIDTH = 100;
/** Where the overview's summaries start, past the widest usual synopsis. */
const SUMMARY_COLUMN = 36;

/** Words joined to lines of at most `width` characters, each after `indent`. */
function wrap(words: string, width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of words.split(/\s+/).filter(Boolean)) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines;
}

/** A term and its description, the description beside the term when it fits, else below it. */
function entry(term: string, says: string, column: number, width = WIDTH): string[] {
  const pad = " ".repeat(column);
  const body = wrap(says, width, pad);
  if (term.length + 2 > column) return [term, ...body];
  return [term.padEnd(column) + body[0]!.slice(column), ...body.slice(1)];
}

/** An argument as a shell would need it written. */
const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`);

/** The ways to run a command, each a line after `countersign`. */
function synopses(command: Command): string[] {
  if (command.synopsis) return command.synopsis.map((s) => `${command.name} ${s}`.trimEnd());
  const args = (command.arguments ?? []).map((a) => (a.optional ? `[${a.name}]` : a.name));
  const options = Object.entries(command.options ?? {}).map(([name, o]) => `[--${name}${o.value ? ` ${o.value}` : ""}]`);
  return [[command.name, ...args, ...options].join(" ")];
}

/** `countersign --help`: every command, one entry each. */
export function overview(): string {
  const lines = [
    "countersign — agents propose, people countersign, a separate executor applies.",
    "",
    "Usage:",
    ...leafCommands().flatMap((c) => entry(`  countersign ${synopses(c)[0]}`, c.summary, SUMMARY_COLUMN)),
    ...entry("  countersign COMMAND --help", "what a command does, its options and the environment variables it reads; runs nothing", SUMMARY_COLUMN),
    "",
    ...wrap(
      "serve and executor need a config file (COUNTERSIGN_CONFIG, or ./countersign.yml); see countersign.example.yml. " +
        "Only start runs without one (on its demo targets).",
      WIDTH,
      "",
    ),
  ];
  return lines.join("\n");
}

/** `countersign GROUP --help`: its subcommands. */
export function groupUsage(group: CommandGroup): string {
  return [
    `countersign ${group.name} — ${group.summary}`,
    "",
    "Usage:",
    ...group.subcommands.flatMap((c) => entry(`  countersign ${synopses(c)[0]}`, c.summary, SUMMARY_COLUMN)),
    "",
    `'countersign ${group.name} SUBCOMMAND --help' shows one's options and an example.`,
  ].join("\n");
}

/** `countersign COMMAND --help`: what it does, its arguments, options and variables, and an example. */
export async function commandUsage(command: Command): Promise<string> {
  const column = 26;
  const options = Object.entries(command.options ?? {}).flatMap(([name, o]) => entry(`  --${name}${o.value ? ` ${o.value}` : ""}`, o.says, column));
  const environment = command.env ? (await import("./env-help.ts")).environmentLines(command.env).map((l) => `  ${l}`) : [];
  const section = (title: string, body: string[]) => (body.length > 0 ? ["", title, ...body] : []);
  return [
    ...wrap(`countersign ${command.name} — ${command.summary}`, WIDTH, ""),
    "",
    "Usage:",
    ...synopses(command).map((s) => `  countersign ${s}`),
    ...(command.about ? ["", ...wrap(command.about, WIDTH, "")] : []),
    ...section(
      "Arguments:",
      (command.arguments ?? []).flatMap((a) => entry(`  ${a.name}`, a.optional ? `${a.says} (optional)` : a.says, column)),
    ),
    ...section("Options:", [...options, ...entry("  -h, --help", "print this and run nothing", column)]),
    ...section("Environment (read once, at start):", environment),
    ...section(
      command.examples.length > 1 ? "Examples:" : "Example:",
      command.examples.map((e) => `  countersign ${e.map(quote).join(" ")}`),
    ),
  ].join("\n");
}
