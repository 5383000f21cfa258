import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";
import type { z } from "zod";
import { isUserGroup } from "../policy/approvers.ts";
import { effectivePolicy, type TargetPolicy } from "../policy/effective-policy.ts";
import { interpolate } from "./interpolate.ts";
import { EnvConfig, FileConfig, type TargetConfig } from "./schema.ts";

/** Who is reading the config: each resolves only the credentials it uses. */
export type Role = "server" | "executor" | "cli" | "check";

export type ServerTarget = Omit<TargetConfig, "write">;

export type SlackSecrets =
  | { enabled: false }
  | { enabled: true; botToken: string; signingSecret: string | undefined; appToken: string | undefined; apiUrl: string | undefined; reviewChannel: string };

export interface Config {
  environment: string;
  port: number;
  /** The interface the server listens on (env HOST). */
  host: string;
  publicUrl: string;
  database: { kind: "pglite"; dataDir: string } | { kind: "postgres"; url: string };
  dataDir: string;
  logLevel: z.infer<typeof EnvConfig>["LOG_LEVEL"];
  /** Slack settings; `enabled` is false when no bot token is set (browser-only). */
  slack: FileConfig["slack"] & SlackSecrets;
  executor: FileConfig["executor"];
  browser: FileConfig["browser"];
  /** People and user groups who may read every plan (and, later, pause and resume). */
  admins: FileConfig["admins"];
  webhooks: FileConfig["webhooks"];
  redact: FileConfig["redact"];
  /** Server: the grant signing key (PEM); absent with PostgreSQL is an error at `serve`, with PGlite one is made in the data dir. */
  grantPrivateKeyPem: string | undefined;
  executorToken: string | undefined;
  /** Executor: where the server is, and the public key(s) it verifies grants with. */
  serverUrl: string | undefined;
  grantPublicKeyPem: string | undefined;
  defaults: FileConfig["defaults"];
  targets: Record<string, TargetConfig>;
  /** The file the config came from, or null when Countersign runs on its built-in defaults. */
  configPath: string | null;
}

export class ConfigError extends Error {
  readonly problems: { key: string; message: string }[];
  constructor(source: string, problems: { key: string; message: string }[]) {
    super(`Invalid configuration (${source}):\n` + problems.map((p) => `  - ${p.key || "(top level)"}: ${p.message}`).join("\n"));
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
}

/** Reads env plus the optional YAML file, once, at start. Throws ConfigError naming every bad key. */
export function loadConfig({ env, role, cwd = process.cwd(), fallback }: LoadOptions): Config {
  // An empty variable means unset, as in most shells' and orchestrators' conventions.
  const envResult = EnvConfig.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== "")));
  if (!envResult.success) throw new ConfigError("environment", zodProblems(envResult.error));
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
  }

  // The server never resolves a target's write block; it drops it unread.
  // `policy check` resolves no credential at all, so it runs anywhere without secrets.
  // Only the server signs people in: nothing else reads the OIDC client secret.
  const skip = (p: readonly string[]) =>
    (p.length === 3 && p[0] === "targets" && ((p[2] === "write" && role !== "executor") || (p[2] === "read" && role === "check"))) ||
    (p.length === 2 && p[0] === "browser" && p[1] === "oidc" && role !== "server");
  const { value, problems } = interpolate(raw, env, skip);
  if (problems.length > 0) throw new ConfigError(source, problems);

  const fileResult = FileConfig.safeParse(value);
  if (!fileResult.success) throw new ConfigError(source, zodProblems(fileResult.error));
  const file = fileResult.data;

  const policyProblems = Object.entries(file.targets).flatMap(([name, target]) =>
    policyProblemsOf(name, effectivePolicy(file.defaults, [target.policy])),
  );
  if (role === "executor") {
    for (const [name, target] of Object.entries(file.targets)) {
      if (!target.write) policyProblems.push({ key: `targets.${name}.write`, message: "is missing; the executor needs write headers for every target it applies to" });
    }
  }
  if (policyProblems.length > 0) throw new ConfigError(source, policyProblems);

  let slack: Config["slack"] = { ...file.slack, enabled: false };
  if (e.SLACK_BOT_TOKEN && role === "server") {
    const problems: { key: string; message: string }[] = [];
    if (!e.SLACK_SIGNING_SECRET && !e.SLACK_APP_TOKEN) problems.push({ key: "SLACK_SIGNING_SECRET", message: "is not set; HTTP mode needs the app's signing secret (or set SLACK_APP_TOKEN for Socket Mode)" });
    if (!file.slack.reviewChannel) problems.push({ key: "slack.reviewChannel", message: "is not set; name the channel id where plans are posted for review" });
    if (problems.length > 0) throw new ConfigError(`${source} + environment`, problems);
    slack = { ...file.slack, enabled: true, botToken: e.SLACK_BOT_TOKEN, signingSecret: e.SLACK_SIGNING_SECRET, appToken: e.SLACK_APP_TOKEN, apiUrl: e.SLACK_API_URL, reviewChannel: file.slack.reviewChannel! };
  }

  if (role === "server" && file.browser.oidc && !file.browser.oidc.teamId && !slack.enabled) {
    throw new ConfigError(source, [{ key: "browser.oidc.teamId", message: "is not set, and without Slack (no SLACK_BOT_TOKEN) there is no bot token's team to default to; set the team id (T…) whose people may sign in" }]);
  }

  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, "");
  const dataDir = path.resolve(cwd, e.COUNTERSIGN_DATA_DIR);
  return {
    environment: file.environment,
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    database: e.DATABASE_URL ? { kind: "postgres", url: e.DATABASE_URL } : { kind: "pglite", dataDir },
    dataDir,
    logLevel: e.LOG_LEVEL,
    slack,
    executor: file.executor,
    browser: file.browser,
    admins: file.admins,
    webhooks: file.webhooks,
    redact: file.redact,
    grantPrivateKeyPem: role === "server" ? e.COUNTERSIGN_GRANT_PRIVATE_KEY : undefined,
    executorToken: e.COUNTERSIGN_EXECUTOR_TOKEN,
    serverUrl: e.COUNTERSIGN_URL,
    grantPublicKeyPem: e.COUNTERSIGN_GRANT_PUBLIC_KEY,
    defaults: file.defaults,
    targets: file.targets,
    configPath: source === "built-in defaults" ? null : configPath,
  };
}

function policyProblemsOf(name: string, policy: TargetPolicy): { key: string; message: string }[] {
  if (policy.approvers.length === 0) {
    return [{ key: `targets.${name}.policy.approvers`, message: "nobody may approve plans for this target; set defaults.approvers or targets." + name + ".policy.approvers" }];
  }
  // With user groups the number of people is only known at decision time.
  if (!policy.approvers.some(isUserGroup) && policy.requiredApprovals > policy.approvers.length) {
    return [{
      key: `targets.${name}.policy.requiredApprovals`,
      message: `needs ${policy.requiredApprovals} approvals but only ${policy.approvers.length} approver(s) are listed; add approvers or lower requiredApprovals`,
    }];
  }
  return [];
}

function zodProblems(error: z.ZodError): { key: string; message: string }[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((k) => ({ key: [...path, k].join("."), message: `unknown key '${k}'; see countersign.example.yml for the keys Countersign reads` }));
    }
    return [{ key: path.join("."), message: issue.message }];
  });
}
