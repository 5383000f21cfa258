import { ConfigError, type ExecutorConfig, loadConfig, type ServerConfig } from "../config/load.ts";
import { ServiceError } from "../service/errors.ts";
import { type CheckResult, fail, pass, printed } from "./doctor/check.ts";
import { databaseCheck } from "./doctor/database.ts";
import { executorTokenAccepted, grantKeyShared, probeServer, type ServerProbe, serverReachable } from "./doctor/executor-server.ts";
import { slackAuth, slackChannel, slackChannels, slackMode } from "./doctor/slack.ts";
import { readRoleWritesNothing, targetReadable, writeRoleMatchesAllow } from "./doctor/targets.ts";
import { executorVariables, serverVariables } from "./doctor/variables.ts";
import { resolveConfigFile } from "./policy-check.ts";

export interface DoctorInput {
  role: string | undefined;
  /** The config file named on the command line, if any. */
  file: string | undefined;
  env: NodeJS.ProcessEnv;
  out: (line: string) => void;
}

type Check = () => CheckResult | Promise<CheckResult>;

/** One check per item, each run when its turn comes. */
const each = <T>(items: T[], check: (item: T) => Promise<CheckResult>): Check[] => items.map((item) => () => check(item));

/**
 * `countersign doctor --role server|executor [CONFIG]` (and `policy check --role`): loads the
 * config as that process would, with this environment, and checks what it would need at run
 * time, one line each. Only reads: nothing is migrated, claimed or written anywhere. Exit 1 on
 * any failure.
 */
export async function doctor({ role, file, env, out }: DoctorInput): Promise<number> {
  if (role !== "server" && role !== "executor")
    throw new ServiceError(
      "invalid_request",
      `${role === undefined ? "--role is missing" : `--role must be server or executor, not '${role}'`}; usage: countersign doctor --role server|executor [CONFIG]`,
    );
  const loaded = load(role, file, env);
  out(printed(loaded.result));
  if (!loaded.as) return 1;

  const checks = loaded.as.role === "server" ? serverChecks(loaded.as.config, env) : executorChecks(loaded.as.config, env);
  // All at once, each bounded, printed in order: the slowest check sets how long it takes.
  const results = checks.map((check) => Promise.resolve().then(check));
  let failed = loaded.result.ok ? 0 : 1;
  for (const result of results) {
    const done = await result;
    out(printed(done));
    if (!done.ok) failed++;
  }
  const total = checks.length + 1;
  out(failed === 0 ? `All ${total} checks pass.` : `${failed} of ${total} checks fail.`);
  return failed === 0 ? 0 : 1;
}

/** The config as `serve` or `executor` loads it (requireFile: neither starts without one). */
function load(
  role: "server" | "executor",
  file: string | undefined,
  env: NodeJS.ProcessEnv,
): { result: CheckResult; as?: { role: "server"; config: ServerConfig } | { role: "executor"; config: ExecutorConfig } } {
  let configPath = file ?? env.COUNTERSIGN_CONFIG ?? "./countersign.yml";
  try {
    configPath = resolveConfigFile(file, env, `countersign doctor --role ${role} CONFIG`);
    const options = { env: { ...env, COUNTERSIGN_CONFIG: configPath }, requireFile: true };
    const as = role === "server" ? { role, config: loadConfig({ ...options, role }) } : { role, config: loadConfig({ ...options, role }) };
    const { config } = as;
    const targets = Object.keys(config.targets);
    return {
      result: pass(
        `config ${config.configPath}: loads as the ${role} loads it (environment '${config.environment}', targets: ${targets.join(", ") || "none"})`,
      ),
      as,
    };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return {
      result: fail(`config ${configPath}: the ${role} would refuse to start`, err.problems.map((p) => `${p.key || "(top level)"}: ${p.message}`).join("; ")),
    };
  }
}

function serverChecks(config: ServerConfig, env: NodeJS.ProcessEnv): Check[] {
  const targets = Object.entries(config.targets);
  const slack = config.slack;
  return [
    () => serverVariables(config, env),
    () => databaseCheck(config),
    ...(slack.enabled
      ? [
          () => slackAuth(slack),
          ...each(slackChannels(config), ({ channel, keys }) => slackChannel(slack, channel, keys)),
          () => slackMode(slack, config.publicUrl),
        ]
      : [() => pass("Slack: not configured (no SLACK_BOT_TOKEN): people review in the browser only")]),
    ...each(targets, ([name, target]) => targetReadable(name, target)),
    ...targets.flatMap(([name, target]) => (target.adapter === "postgres.row" ? [() => readRoleWritesNothing(name, target)] : [])),
  ];
}

function executorChecks(config: ExecutorConfig, env: NodeJS.ProcessEnv): Check[] {
  const targets = Object.entries(config.targets);
  let probe: Promise<ServerProbe> | undefined;
  const probed = () => {
    if (!probe) {
      probe = probeServer(config);
      probe.catch(() => {}); // each check that reads it reports the failure
    }
    return probe;
  };
  return [
    () => executorVariables(config, env),
    () => serverReachable(config, probed()),
    () => executorTokenAccepted(config, probed()),
    () => grantKeyShared(config, probed()),
    ...each(targets, ([name, target]) => targetReadable(name, target)),
    ...targets.flatMap(([name, target]) => (target.adapter === "postgres.row" ? [() => writeRoleMatchesAllow(name, target)] : [])),
  ];
}
