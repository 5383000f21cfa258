import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";
import type { z } from "zod";
import { isUserGroup } from "../policy/approvers.ts";
import { effectivePolicy, type TargetPolicy } from "../policy/effective-policy.ts";
import { interpolate, mayInterpolate, prune, type InterpolationProblem, type Skip } from "./interpolate.ts";
import { EnvConfig, FileConfig, type AnyTargetConfig } from "./schema.ts";
import { type ConfigProblem, zodProblems } from "./zod-problems.ts";

/** Who is reading the config: each resolves only the credentials it uses. */
export type Role = "server" | "executor" | "cli" | "check";

/** Omit over each member of a union (Omit itself merges the members first). */
type OmitEach<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A target as the server sees it, of any adapter: no write block, not even an unresolved one. */
export type ServerTarget = OmitEach<AnyTargetConfig, "write">;
/** An http.json target as the server sees it. */
export type { HttpJsonServerTarget } from "../adapters/http-json-target.ts";
/** A target as the executor sees it, of any adapter: its write credentials are always there. */
export type ExecutorTarget = AnyTargetConfig extends infer T ? (T extends { write?: infer W } ? T & { write: NonNullable<W> } : never) : never;

export type SlackSecrets =
  | { enabled: false }
  | { enabled: true; botToken: string; signingSecret: string | undefined; appToken: string | undefined; apiUrl: string | undefined; reviewChannel: string };

/** What every role reads. */
interface SharedConfig {
  environment: string;
  logLevel: z.infer<typeof EnvConfig>["LOG_LEVEL"];
  defaults: FileConfig["defaults"];
  /** The file the config came from, or null when Countersign runs on its built-in defaults. */
  configPath: string | null;
}

/** The server's view (`serve`, `start`): read credentials only; no write credential can reach it. */
export interface ServerConfig extends SharedConfig {
  port: number;
  /** The interface the server listens on (env HOST). */
  host: string;
  publicUrl: string;
  database: { kind: "pglite"; dataDir: string } | { kind: "postgres"; url: string };
  dataDir: string;
  /** Slack settings; `enabled` is false when no bot token is set (browser-only). */
  slack: FileConfig["slack"] & SlackSecrets;
  /** `executor`; configs built in code may leave out `missingAfterSeconds` and `expected`, and the defaults apply. */
  executor: Pick<FileConfig["executor"], "leaseSeconds"> & Partial<Omit<FileConfig["executor"], "leaseSeconds">>;
  /** How long a stop on SIGTERM may take (`shutdownSeconds`); configs built in code may leave it out, and the default applies. */
  shutdownSeconds?: number;
  browser: FileConfig["browser"];
  /** People and user groups who may read every plan (and, later, pause and resume). */
  admins: FileConfig["admins"];
  webhooks: FileConfig["webhooks"];
  redact: FileConfig["redact"];
  /** Agent limits (`limits`); configs built in code may leave them out, and the defaults apply. */
  limits?: FileConfig["limits"];
  /** Retention (`retention`); configs built in code may leave it out, and the defaults apply. */
  retention?: FileConfig["retention"];
  /** When set, GET /metrics requires it as a bearer token (COUNTERSIGN_METRICS_TOKEN). */
  metricsToken?: string | undefined;
  /** The audit log's seal signing (`audit.seal`); configs built in code may leave it out. */
  audit?: FileConfig["audit"];
  /** The key that signs audit seals (COUNTERSIGN_AUDIT_SEAL_KEY, PEM or JWK); absent: seals are not signed. */
  auditSealKey?: string | undefined;
  /** The grant signing key (PEM); absent with PostgreSQL is an error at `serve`, with PGlite one is made in the data dir. */
  grantPrivateKeyPem: string | undefined;
  /** Absent: the executor API refuses everyone. */
  executorToken: string | undefined;
  targets: Record<string, ServerTarget>;
}

/** The server's config; most code only ever sees this role. */
export type Config = ServerConfig;

/** The executor's view: where the server is, how to prove itself, what verifies grants, and every target's write credentials. */
export interface ExecutorConfig extends SharedConfig {
  serverUrl: string;
  executorToken: string;
  grantPublicKeyPem: string;
  targets: Record<string, ExecutorTarget>;
}

/**
 * One-shot commands (`migrate`, `agents`, `audit`, `pause`, `login-link`) and `policy check`: no
 * secret of any kind. Their targets carry policy only: no read or write credential is resolved.
 */
export type CliConfig = Omit<ServerConfig, "grantPrivateKeyPem" | "executorToken" | "slack"> & { slack: FileConfig["slack"] & { enabled: false } };

export class ConfigError extends Error {
  readonly problems: { key: string; message: string }[];
  constructor(source: string, problems: { key: string; message: string }[]) {
    const named = problems.map((p) => `${p.key || "(top level)"}: ${p.message}`);
    // One problem is one line, as every start-up problem is; several are listed below the source.
    super(`Invalid configuration (${source}):` + (named.length === 1 ? ` ${named[0]}` : named.map((line) => `\n  - ${line}`).join("")));
    this.name = "ConfigError";
    this.problems = problems;
  }
}

export interface LoadOptions {
  env: Record<string, string | undefined>;
  role: Role;
  cwd?: string;
  /** Used when no config file exists (the embedded demo passes its own). */
  fallback?: unknown;
  /**
   * A missing config file is an error rather than the built-in defaults: `serve` and `executor`
   * without one would run with no targets and say nothing.
   */
  requireFile?: boolean;
}

/** What `policy check` sees: no credential resolved, and which targets an executor could not apply to. */
export type CheckConfig = CliConfig & { targetsWithoutWrite: string[] };

const NO_CONFIG_FILE = (configPath: string) =>
  `is not set and ${configPath} does not exist; this command needs the targets a config file lists. ` +
  "Copy countersign.example.yml to ./countersign.yml, or set COUNTERSIGN_CONFIG to your file's path ('countersign start' runs a demo without one)";

/** Reads env plus the optional YAML file, once, at start, into the view of one role. Throws ConfigError naming every bad key. */
export function loadConfig(options: LoadOptions & { role: "server" }): ServerConfig;
export function loadConfig(options: LoadOptions & { role: "executor" }): ExecutorConfig;
export function loadConfig(options: LoadOptions & { role: "cli" }): CliConfig;
export function loadConfig(options: LoadOptions & { role: "check" }): CheckConfig;
export function loadConfig(options: LoadOptions): ServerConfig | ExecutorConfig | CliConfig;
export function loadConfig({ env, role, cwd = process.cwd(), fallback, requireFile = false }: LoadOptions): ServerConfig | ExecutorConfig | CliConfig {
  // An empty variable means unset, as in most shells' and orchestrators' conventions.
  const envResult = EnvConfig.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== "")));
  if (!envResult.success) throw new ConfigError("environment", zodProblems(envResult.error.issues));
  const e = envResult.data;

  const explicit = e.COUNTERSIGN_CONFIG !== undefined;
  const configPath = path.resolve(cwd, e.COUNTERSIGN_CONFIG ?? "countersign.yml");
  let raw: unknown = fallback ?? {};
  let source = "built-in defaults";
  if (existsSync(configPath)) {
    source = configPath;
    try {
      raw = parseYaml(readFileSync(configPath, "utf8")) ?? {};
    } catch (err) {
      const where = err instanceof YAMLParseError ? ` at line ${err.linePos?.[0]?.line}` : "";
      throw new ConfigError(source, [{ key: "", message: `is not valid YAML${where}: ${(err as Error).message.split("\n")[0]}` }]);
    }
  } else if (explicit) {
    throw new ConfigError("environment", [{ key: "COUNTERSIGN_CONFIG", message: `points to ${configPath}, which does not exist; fix the path or unset it` }]);
  } else if (requireFile && fallback === undefined) {
    throw new ConfigError("environment", [{ key: "COUNTERSIGN_CONFIG", message: NO_CONFIG_FILE(configPath) }]);
  }

  // What the environment alone lacks is named with the file's problems, all at once.
  const envProblems: ConfigProblem[] = [];
  if (role === "executor") {
    const missing = (
      [
        ["COUNTERSIGN_URL", e.COUNTERSIGN_URL, "the server to claim approved plans from, e.g. http://127.0.0.1:3000"],
        ["COUNTERSIGN_EXECUTOR_TOKEN", e.COUNTERSIGN_EXECUTOR_TOKEN, "the same secret the server has"],
        ["COUNTERSIGN_GRANT_PUBLIC_KEY", e.COUNTERSIGN_GRANT_PUBLIC_KEY, "the public key that verifies grants ('countersign keys generate' prints a pair)"],
      ] as const
    ).filter(([, value]) => !value);
    envProblems.push(...missing.map(([key, , what]) => ({ key, message: `is not set: ${what}` })));
  }
  if (role === "server" && e.DATABASE_URL && !e.COUNTERSIGN_GRANT_PRIVATE_KEY) envProblems.push({ ...GRANT_KEY_REQUIRED });

  // Only the executor reads a target's write block; the others drop it unread.
  // One-shot commands and `policy check` resolve no target credential, so they run without secrets.
  // Only the server signs people in: nothing else reads the OIDC client secret.
  const noCredentials = role === "check" || role === "cli";
  const skip: Skip = (p) =>
    (p.length === 3 && p[0] === "targets" && ((p[2] === "write" && role !== "executor") || (p[2] === "read" && noCredentials))) ||
    (p.length === 2 && p[0] === "browser" && p[1] === "oidc" && role !== "server");
  const pruned = prune(raw, skip);
  if (noCredentials) standInForReadUrls(raw, pruned);

  // The shape is checked before any variable is resolved: a misspelled key is named first, and a
  // variable under it (a write credential under a misspelled `targets`, say) is never asked for.
  const shape = shapeProblems(pruned);
  const { value, problems: unset } = interpolate(pruned, env, shape.covers);
  const fileProblems = [...shape.problems, ...unsetVariables(unset)];
  if (fileProblems.length > 0 || envProblems.length > 0) {
    const from = fileProblems.length === 0 ? "environment" : envProblems.length === 0 ? source : `${source} + environment`;
    throw new ConfigError(from, [...fileProblems, ...envProblems]);
  }

  const fileResult = FileConfig.safeParse(value);
  if (!fileResult.success) throw new ConfigError(source, zodProblems(fileResult.error.issues, FileConfig, value));
  const file = fileResult.data;

  const policyProblems = Object.entries(file.targets).flatMap(([name, target]) => policyProblemsOf(name, effectivePolicy(file.defaults, [target.policy])));
  const withoutWrite = targetsWithoutWrite(raw);
  if (role === "executor") {
    for (const name of withoutWrite) policyProblems.push({ key: `targets.${name}.write`, message: withoutWriteMessage(file.targets[name]?.adapter) });
  }
  if (policyProblems.length > 0) throw new ConfigError(source, policyProblems);

  let slack: ServerConfig["slack"] = { ...file.slack, enabled: false };
  if (e.SLACK_BOT_TOKEN && role === "server") {
    const problems: { key: string; message: string }[] = [];
    if (!e.SLACK_SIGNING_SECRET && !e.SLACK_APP_TOKEN)
      problems.push({ key: "SLACK_SIGNING_SECRET", message: "is not set; HTTP mode needs the app's signing secret (or set SLACK_APP_TOKEN for Socket Mode)" });
    if (!file.slack.reviewChannel) problems.push({ key: "slack.reviewChannel", message: "is not set; name the channel id where plans are posted for review" });
    if (problems.length > 0) throw new ConfigError(`${source} + environment`, problems);
    slack = {
      ...file.slack,
      enabled: true,
      botToken: e.SLACK_BOT_TOKEN,
      signingSecret: e.SLACK_SIGNING_SECRET,
      appToken: e.SLACK_APP_TOKEN,
      apiUrl: e.SLACK_API_URL,
      reviewChannel: file.slack.reviewChannel!,
    };
  }

  if (role === "server") {
    const problems = auditSealProblems(file, e.COUNTERSIGN_AUDIT_SEAL_KEY, e.COUNTERSIGN_GRANT_PRIVATE_KEY);
    if (problems.length > 0) throw new ConfigError(`${source} + environment`, problems);
  }

  if (role === "server" && file.browser.oidc && !file.browser.oidc.teamId && !slack.enabled) {
    throw new ConfigError(source, [
      {
        key: "browser.oidc.teamId",
        message: "is not set, and without Slack (no SLACK_BOT_TOKEN) there is no bot token's team to default to; set the team id (T…) whose people may sign in",
      },
    ]);
  }

  const shared: SharedConfig = {
    environment: file.environment,
    logLevel: e.LOG_LEVEL,
    defaults: file.defaults,
    configPath: source === "built-in defaults" ? null : configPath,
  };
  if (role === "executor") {
    return {
      ...shared,
      serverUrl: e.COUNTERSIGN_URL!,
      executorToken: e.COUNTERSIGN_EXECUTOR_TOKEN!,
      grantPublicKeyPem: e.COUNTERSIGN_GRANT_PUBLIC_KEY!,
      targets: file.targets as Record<string, ExecutorTarget>, // every write block was checked above
    };
  }

  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, "");
  const dataDir = path.resolve(cwd, e.COUNTERSIGN_DATA_DIR);
  const served = {
    ...shared,
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    database: e.DATABASE_URL ? { kind: "postgres" as const, url: e.DATABASE_URL } : { kind: "pglite" as const, dataDir },
    dataDir,
    executor: file.executor,
    shutdownSeconds: file.shutdownSeconds,
    browser: file.browser,
    admins: file.admins,
    webhooks: file.webhooks,
    redact: file.redact,
    limits: file.limits,
    retention: file.retention,
    audit: file.audit,
    targets: file.targets as Record<string, ServerTarget>, // write blocks were dropped unread
  };
  if (role === "server")
    return {
      ...served,
      slack,
      grantPrivateKeyPem: e.COUNTERSIGN_GRANT_PRIVATE_KEY,
      executorToken: e.COUNTERSIGN_EXECUTOR_TOKEN,
      metricsToken: e.COUNTERSIGN_METRICS_TOKEN,
      auditSealKey: e.COUNTERSIGN_AUDIT_SEAL_KEY,
    };
  const cli: CliConfig = { ...served, slack: { ...file.slack, enabled: false } };
  if (role === "check") {
    const check: CheckConfig = { ...cli, targetsWithoutWrite: withoutWrite };
    return check;
  }
  return cli;
}

/** On PostgreSQL the server cannot make its own grant key: replicas sharing the database must sign alike. */
export const GRANT_KEY_REQUIRED = {
  key: "COUNTERSIGN_GRANT_PRIVATE_KEY",
  message: "is not set; with DATABASE_URL every server replica must sign grants with the same key. 'countersign keys generate' prints a pair",
} as const;

/**
 * Seal signing needs its own key: publishing is configured without one, or the grant key given
 * as the seal key (a leaked grant key would then also forge the audit's proof), are refused here;
 * runServer compares the keys themselves too (a generated grant key, a JWK of the same key).
 */
function auditSealProblems(file: FileConfig, sealKey: string | undefined, grantKey: string | undefined): { key: string; message: string }[] {
  const where = [file.audit.seal && "audit.seal", file.slack.auditChannel && "slack.auditChannel"].filter(Boolean).join(" and ");
  if (!sealKey && where)
    return [
      {
        key: "COUNTERSIGN_AUDIT_SEAL_KEY",
        message: `is not set, but ${where} asks for signed audit seals; 'countersign keys generate --audit-seal' prints a key`,
      },
    ];
  if (sealKey && grantKey && sealKey.trim() === grantKey.trim()) return [{ key: "COUNTERSIGN_AUDIT_SEAL_KEY", message: AUDIT_KEY_IS_GRANT_KEY }];
  return [];
}

export const AUDIT_KEY_IS_GRANT_KEY =
  "is the grant signing key; audit seals need a dedicated key (whoever holds the grant key must not be able to forge the audit's proof): 'countersign keys generate --audit-seal' prints one";

/** What the executor needs to be told a target lacks, in that target's adapter's terms. */
function withoutWriteMessage(adapter: string | undefined): string {
  return adapter === "postgres.row"
    ? 'is missing; the executor needs a write connection for every target it applies to (add write: { url: "${…}" }, a role that may UPDATE/INSERT/DELETE the allowed tables)'
    : 'is missing; the executor needs write headers for every target it applies to (add write: { headers: { Authorization: "Bearer ${…}" } })';
}

/**
 * One-shot commands and `policy check` resolve no credential, so read blocks were dropped unread;
 * a postgres.row target needs its read URL to be valid config, so a stand-in that is never
 * connected to takes its place (a target whose raw config has no read block stays without one, and is refused).
 */
function standInForReadUrls(raw: unknown, value: unknown): void {
  const rawTargets = (raw as { targets?: Record<string, unknown> } | null)?.targets;
  const targets = (value as { targets?: Record<string, unknown> } | null)?.targets;
  if (typeof rawTargets !== "object" || rawTargets === null || typeof targets !== "object" || targets === null) return;
  for (const [name, target] of Object.entries(targets)) {
    const rawTarget = rawTargets[name] as { adapter?: unknown; read?: unknown } | undefined;
    if (rawTarget?.adapter === "postgres.row" && rawTarget.read !== undefined && typeof target === "object" && target !== null) {
      (target as { read?: unknown }).read = { url: "postgres://unresolved.invalid/never-connected" };
    }
  }
}

/** Targets whose raw YAML has no `write` block: an executor could not apply to them. Read before any role drops the blocks. */
function targetsWithoutWrite(raw: unknown): string[] {
  const targets = (raw as { targets?: unknown } | null)?.targets;
  if (typeof targets !== "object" || targets === null) return [];
  return Object.entries(targets)
    .filter(([, t]) => typeof t !== "object" || t === null || !("write" in t))
    .map(([name]) => name);
}

function policyProblemsOf(name: string, policy: TargetPolicy): { key: string; message: string }[] {
  if (policy.approvers.length === 0) {
    return [
      {
        key: `targets.${name}.policy.approvers`,
        message: "nobody may approve plans for this target; set defaults.approvers or targets." + name + ".policy.approvers",
      },
    ];
  }
  // With user groups the number of people is only known at decision time.
  if (!policy.approvers.some(isUserGroup) && policy.requiredApprovals > policy.approvers.length) {
    return [
      {
        key: `targets.${name}.policy.requiredApprovals`,
        message: `needs ${policy.requiredApprovals} approvals but only ${policy.approvers.length} approver(s) are listed; add approvers or lower requiredApprovals`,
      },
    ];
  }
  return [];
}

/** Every variable the file uses and the environment lacks, as one problem: one line to act on. */
function unsetVariables(problems: InterpolationProblem[]): ConfigProblem[] {
  if (problems.length === 0) return [];
  const names = [...new Set(problems.map((p) => p.variable))];
  const uses = problems.map((p) => `${p.key || "(top level)"} uses \${${p.variable}}`).join(", ");
  const them = names.length === 1 ? "is not set; export it" : "are not set; export them";
  return [{ key: names.join(", "), message: `${them} (${uses}), or change ${problems.length === 1 ? "that value" : "those values"}` }];
}

/**
 * What is wrong with the file whatever the environment holds: unknown keys, a target whose
 * adapter is missing or unknown, a mapping where a value belongs, and any value without a
 * `${…}` in it. `covers` says which keys those problems are at, so none of their variables is
 * resolved (or asked for).
 */
function shapeProblems(pruned: unknown): { problems: ConfigProblem[]; covers: Skip } {
  const result = FileConfig.safeParse(pruned);
  if (result.success) return { problems: [], covers: () => false };
  const settled = result.error.issues.filter((issue) => {
    if (issue.code === "unrecognized_keys") return true;
    const at = valueAt(pruned, issue.path);
    // Interpolation changes strings only: a mapping or a list stays what it is.
    return !mayInterpolate(at) || (issue.code === "invalid_type" && typeof at !== "string");
  });
  const unknownFirst = [...settled.filter((i) => i.code === "unrecognized_keys"), ...settled.filter((i) => i.code !== "unrecognized_keys")];
  const paths = settled.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === "unrecognized_keys") return issue.keys.map((k) => [...path, k]);
    // A target without a known adapter is not a target: none of its keys is read.
    return [issue.code === "invalid_union" && "discriminator" in issue ? path.slice(0, -1) : path];
  });
  return {
    problems: zodProblems(unknownFirst, FileConfig, pruned),
    covers: (p) => paths.some((settledPath) => settledPath.length <= p.length && settledPath.every((segment, i) => segment === p[i])),
  };
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const segment of path) at = typeof at === "object" && at !== null ? (at as Record<PropertyKey, unknown>)[segment] : undefined;
  return at;
}
