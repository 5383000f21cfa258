/**
 * `npm run gen:config-docs`: writes docs/configuration.md from the config schema's descriptions
 * and examples (src/config/schema.ts) and the environment's help (src/cli/env-help.ts, what
 * `countersign COMMAND --help` prints). Without --write it prints the page.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { z } from "zod";
import { leafCommands } from "../src/cli/commands.ts";
import { environmentVariables, type EnvReader } from "../src/cli/env-help.ts";
import { FileConfig } from "../src/config/schema.ts";

export const CONFIGURATION_PAGE = "docs/configuration.md";

/** The parts of a JSON Schema node (as z.toJSONSchema writes it) the page reads. */
interface Node {
  type?: string;
  description?: string;
  examples?: unknown[];
  default?: unknown;
  const?: unknown;
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  maxItems?: number;
  items?: Node;
  properties?: Record<string, Node>;
  required?: string[];
  additionalProperties?: Node | boolean;
  oneOf?: Node[];
}

/** One key of the file, as a row of the page. */
export interface KeyRow {
  path: string;
  type: string;
  fallback: string;
  description: string | undefined;
  example: string | undefined;
  /** A key whose value has no keys of its own to describe it: it needs an example. */
  leaf: boolean;
}

/** How the page names one entry of a map, by the map's key. */
const ENTRY_NAMES: Record<string, string> = { targets: "name", agents: "agent", tables: "table", headers: "header" };

const schemaOf = (schema: z.ZodType): Node => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Node;

const mapValue = (node: Node): Node | undefined => (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined);
/** An object with keys of its own (not a map): its keys get rows of their own. */
const isObject = (node: Node) => node.properties !== undefined;
const entryName = (key: string) => `<${ENTRY_NAMES[key] ?? "key"}>`;

/** A value as it is written in countersign.yml, on one line. */
const yamlValue = (value: unknown) => stringify(value, { collectionStyle: "flow", flowCollectionPadding: false, lineWidth: 0 }).trim();

function typeOf(node: Node, key = ""): string {
  if (node.const !== undefined) return `\`${String(node.const)}\``;
  if (node.enum) return oneOf(node.enum);
  if (node.oneOf) return `a target: ${oneOf(node.oneOf.map((o) => o.properties?.adapter?.const))} (\`adapter\`)`;
  switch (node.type) {
    case "integer":
    case "number": {
      const low = node.minimum ?? (node.exclusiveMinimum === undefined ? undefined : node.exclusiveMinimum + (node.type === "integer" ? 1 : 0));
      const high = node.maximum === undefined || node.maximum >= Number.MAX_SAFE_INTEGER ? undefined : node.maximum;
      const word = node.type === "integer" ? "whole number" : "number";
      if (low !== undefined && high !== undefined) return `${word}, ${low} to ${high}`;
      if (low !== undefined) return `${word}, at least ${low}`;
      return high !== undefined ? `${word}, at most ${high}` : word;
    }
    case "string":
      return node.format === "uri" ? "URL" : "string";
    case "boolean":
      return "boolean";
    case "array":
      return `list of ${node.items ? typeOf(node.items) : "values"}${node.maxItems === undefined ? "" : `, at most ${node.maxItems}`}`;
    case "object": {
      const value = mapValue(node);
      if (isObject(node)) return "object";
      return value ? `map: \`${entryName(key)}\` → ${isObject(value) ? "object" : typeOf(value)}` : "object";
    }
    default:
      return "any";
  }
}

function oneOf(values: unknown[]): string {
  const shown = values.map((v) => `\`${String(v)}\``);
  return shown.length === 1 ? shown[0]! : `${shown.slice(0, -1).join(", ")} or ${shown.at(-1)}`;
}

function fallbackOf(node: Node, required: boolean): string {
  if ("default" in node) return isObject(node) ? "its keys' defaults" : `\`${yamlValue(node.default)}\``;
  return required ? "required" : "—";
}

/** A row for each key under `node`, depth first in the schema's order; a map of objects continues under `<entry>`. */
function keyRows(node: Node, prefix: string): KeyRow[] {
  return Object.entries(node.properties ?? {}).flatMap(([key, child]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    const value = mapValue(child);
    const nested = isObject(child) ? keyRows(child, path) : value && isObject(value) ? keyRows(value, `${path}.${entryName(key)}`) : [];
    const leaf = !isObject(child) && !(value && (isObject(value) || value.oneOf));
    const example = child.examples?.[0] ?? child.const;
    const row: KeyRow = {
      path,
      type: typeOf(child, key),
      fallback: fallbackOf(child, node.required?.includes(key) ?? false),
      description: child.description,
      example: example === undefined ? undefined : `\`${yamlValue(example)}\``,
      leaf,
    };
    return [row, ...nested];
  });
}

const TARGET = "targets.<name>";

/** The file's keys outside targets, and each kind of target's keys under `targets.<name>`. */
export function configurationKeys(): { file: KeyRow[]; kinds: { adapter: string; description: string | undefined; rows: KeyRow[] }[] } {
  const file = schemaOf(FileConfig);
  const kinds = (mapValue(file.properties!.targets!)?.oneOf ?? []).map((kind) => ({
    adapter: String(kind.properties?.adapter?.const),
    description: kind.description,
    rows: keyRows(kind, TARGET),
  }));
  return { file: keyRows(file, ""), kinds };
}

/** Every key without a description, and every key taking a plain value without an example: the page would leave a reader guessing. */
export function undescribedKeys(): string[] {
  const { file, kinds } = configurationKeys();
  const env = environmentVariables()
    .filter((v) => !v.says.trim())
    .map((v) => `${v.name}: no description`);
  const keys = [...file, ...kinds.flatMap((k) => k.rows)].flatMap((row) => [
    ...(row.description?.trim() ? [] : [`${row.path}: no description`]),
    ...(row.leaf && row.example === undefined ? [`${row.path}: no example`] : []),
  ]);
  return [...keys, ...env];
}

/** A table cell: one line, pipes escaped. */
const cell = (text: string | undefined) => (text ?? "").replace(/\s*\n\s*/g, " ").replaceAll("|", "\\|");

function table(rows: KeyRow[]): string[] {
  return [
    "| key | type | default | description | example |",
    "|---|---|---|---|---|",
    ...rows.map((r) => `| \`${cell(r.path)}\` | ${cell(r.type)} | ${cell(r.fallback)} | ${cell(r.description)} | ${cell(r.example ?? "")} |`),
  ];
}

const READERS: Record<EnvReader, string> = { server: "`serve`", executor: "`executor`", start: "`start`", database: "one-shot commands" };

function environmentSection(): string[] {
  const oneShot = [...new Set(leafCommands().flatMap((c) => (c.env === "database" ? [c.name.split(" ")[0]!] : [])))];
  return [
    "## Environment variables",
    "",
    "Read once, at start, by the commands named; `countersign COMMAND --help` lists the ones that command reads. " +
      `One-shot commands are those that open the database: ${oneShot.map((c) => `\`${c}\``).join(", ")}.`,
    "",
    "| variable | default | read by | description |",
    "|---|---|---|---|",
    ...environmentVariables().map(
      (v) =>
        `| \`${v.name}\` | ${v.fallback === undefined ? "—" : `\`${cell(v.fallback)}\``} | ${v.readers.map((r) => READERS[r]).join(", ")} | ${cell(v.says)} |`,
    ),
  ];
}

/** The page, from the schema and the environment's help. */
export function configurationPage(): string {
  const { file, kinds } = configurationKeys();
  const topLevel = [...new Set(file.map((r) => r.path.split(".")[0]!))].filter((key) => key !== "targets");
  const targets = file.find((r) => r.path === "targets")!;
  const lines = [
    "# Configuration reference",
    "",
    "<!-- Generated from src/config/schema.ts and src/cli/env-help.ts by `npm run gen:config-docs`; edit those, not this page. -->",
    "",
    "For whoever writes a `countersign.yml`: every key Countersign reads, with its type, default and an example, and every",
    "environment variable. [`countersign.example.yml`](../countersign.example.yml) is an annotated file to copy and cut down;",
    "`countersign policy check` reads a file as the server or the executor would ([deploy.md](deploy.md)).",
    "",
    `${cell(schemaOf(FileConfig).description)} A key left out takes its default; an unknown key is refused, naming it.`,
    "",
    "## The file",
    "",
    ...topLevel.flatMap((key) => {
      const rows = file.filter((r) => r.path === key || r.path.startsWith(`${key}.`));
      return [`### \`${key}\``, "", ...table(rows), ""];
    }),
    "## Targets",
    "",
    `${cell(targets.description)} Each is a block under \`${TARGET}\`; the keys below are its keys, by kind.`,
    "",
    ...kinds.flatMap((kind) => [`### \`${kind.adapter}\``, "", cell(kind.description), "", ...table(kind.rows), ""]),
    ...environmentSection(),
  ];
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const missing = undescribedKeys();
  if (missing.length > 0) {
    console.error(`gen-config-docs: describe these keys in the schema first (.meta({ description, examples })):\n  ${missing.join("\n  ")}`);
    process.exit(1);
  }
  if (process.argv.includes("--write")) {
    writeFileSync(new URL(`../${CONFIGURATION_PAGE}`, import.meta.url), configurationPage());
    console.log(`wrote ${CONFIGURATION_PAGE}`);
  } else process.stdout.write(configurationPage());
}
