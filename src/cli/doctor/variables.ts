import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { interpolate, type Skip } from "../../config/interpolate.ts";
import type { ExecutorConfig, ServerConfig } from "../../config/load.ts";
import { type CheckResult, fail, pass } from "./check.ts";

type Env = Record<string, string | undefined>;

// Which parts of the file each role resolves, as loadConfig drops the rest unread.
const writeBlocksOnly: Skip = (p) => (p.length === 1 && p[0] !== "targets") || (p.length === 3 && p[2] !== "write");
const allButWriteBlocks: Skip = (p) => p.length === 3 && p[0] === "targets" && p[2] === "write";
const oidcOnly: Skip = (p) => (p.length === 1 && p[0] !== "browser") || (p.length === 2 && p[1] !== "oidc");
const allButOidc: Skip = (p) => p.length === 2 && p[0] === "browser" && p[1] === "oidc";

/** What only the server may hold: beside write credentials, any of them lets one process approve and apply alone. */
const SERVER_SECRETS = [
  "DATABASE_URL",
  "COUNTERSIGN_GRANT_PRIVATE_KEY",
  "COUNTERSIGN_AUDIT_SEAL_KEY",
  "SLACK_BOT_TOKEN",
  "SLACK_SIGNING_SECRET",
  "SLACK_APP_TOKEN",
] as const;

const isSet = (value: string | undefined) => value !== undefined && value !== "";

/**
 * The server holds what it needs and no write credential: no variable that only the file's
 * `write` blocks name is set where it runs. It never resolves them, but a process environment
 * that holds one leaks it all the same (to a child, a crash dump, a debugging shell).
 */
export function serverVariables(config: ServerConfig, env: Env): CheckResult {
  const raw = rawFile(config.configPath);
  const reads = variablesNamed(raw, allButWriteBlocks);
  const writeOnly = [...variablesNamed(raw, writeBlocksOnly)].filter(([name]) => !reads.has(name));
  const held = writeOnly.filter(([name]) => isSet(env[name]));
  const problems: string[] = [];
  const fixes: string[] = [];
  if (held.length > 0) {
    problems.push(`holds ${held.map(([name, keys]) => `${name} (${keys.join(", ")})`).join(", ")}: write credentials`);
    fixes.push(`unset ${held.map(([name]) => name).join(", ")} where the server runs; only the executor's environment holds write credentials`);
  }
  if (!config.executorToken && config.executor.expected !== false) {
    problems.push("has no COUNTERSIGN_EXECUTOR_TOKEN, so serve refuses to start (no executor could claim a plan)");
    fixes.push(
      "set COUNTERSIGN_EXECUTOR_TOKEN (16+ random characters), the same on the server and the executors, or executor: { expected: false } to run without one",
    );
  }
  if (problems.length > 0) return fail(`variables: the server ${problems.join("; ")}`, fixes.join("; "));
  const holds = [
    config.database.kind === "postgres" && "DATABASE_URL",
    config.grantPrivateKeyPem && "COUNTERSIGN_GRANT_PRIVATE_KEY",
    config.executorToken ? "COUNTERSIGN_EXECUTOR_TOKEN" : "no COUNTERSIGN_EXECUTOR_TOKEN (executor.expected: false)",
    config.slack.enabled && "SLACK_BOT_TOKEN",
    config.slack.enabled && config.slack.signingSecret && "SLACK_SIGNING_SECRET",
    config.slack.enabled && config.slack.appToken && "SLACK_APP_TOKEN",
    config.auditSealKey && "COUNTERSIGN_AUDIT_SEAL_KEY",
  ].filter((name): name is string => typeof name === "string");
  return pass(`variables: the server holds ${holds.join(", ")}${readsText(reads)}; no write credential${unsetText(writeOnly)}`);
}

/** The executor holds what it needs and none of the server's secrets. */
export function executorVariables(config: ExecutorConfig, env: Env): CheckResult {
  const raw = rawFile(config.configPath);
  const reads = variablesNamed(raw, allButOidc);
  const serverOnly = [...SERVER_SECRETS, ...variablesNamed(raw, oidcOnly).keys()].filter((name) => !reads.has(name));
  const held = serverOnly.filter((name) => isSet(env[name]));
  if (held.length > 0)
    return fail(
      `variables: the executor holds ${held.join(", ")}, which only the server uses`,
      `unset ${held.join(", ")} where the executor runs; beside write credentials, a grant key, the database or a Slack secret lets one process approve and apply alone`,
    );
  return pass(
    `variables: the executor holds COUNTERSIGN_URL, COUNTERSIGN_EXECUTOR_TOKEN, COUNTERSIGN_GRANT_PUBLIC_KEY${readsText(reads)}; none of the server's secrets`,
  );
}

/** The file as written, `${…}` unresolved; loadConfig has read and checked it already. */
function rawFile(configPath: string | null): unknown {
  return configPath === null ? {} : parseYaml(readFileSync(configPath, "utf8"));
}

/** Every `${VAR}` the file names outside what `skip` drops, with the keys that name it. */
function variablesNamed(raw: unknown, skip: Skip): Map<string, string[]> {
  const named = new Map<string, string[]>();
  for (const { variable, key } of interpolate(raw, {}, skip).problems) named.set(variable, [...(named.get(variable) ?? []), key]);
  return named;
}

const readsText = (reads: Map<string, string[]>) => (reads.size > 0 ? ` and the variables its config reads (${[...reads.keys()].join(", ")})` : "");
const unsetText = (writeOnly: [string, string[]][]) => (writeOnly.length > 0 ? ` (${writeOnly.map(([name]) => name).join(", ")} unset)` : "");
