import { existsSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { defaultRegistry } from "../adapters/registry.ts";
import { ConfigError, loadConfig, type CheckConfig } from "../config/load.ts";
import { effectivePolicy } from "../policy/effective-policy.ts";
import { limitsOf, type AgentLimits } from "../policy/agent-limits.ts";
import { ServiceError } from "../service/errors.ts";

const USAGE = "usage: countersign policy check [FILE] [--role server|executor]";

/**
 * `countersign policy check [FILE]`: validates a config (throwing ConfigError naming every bad
 * key) and prints the policy each target lives under, as plans will record it. No credential is
 * resolved, so it runs anywhere. With --role it is `countersign doctor` (src/cli/commands.ts
 * sends it there): the config loaded as that process would, and what it needs checked.
 */
export function policyCheck(args: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): number {
  let parsed: { positionals: string[] };
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true });
  } catch (err) {
    throw new ServiceError("invalid_request", `${(err as Error).message}; ${USAGE}`);
  }
  if (parsed.positionals.length > 1) throw new ServiceError("invalid_request", USAGE);
  const file = resolveConfigFile(parsed.positionals[0], env, "countersign policy check FILE");
  const config = loadConfig({ env: { ...env, COUNTERSIGN_CONFIG: file }, role: "check" });
  out(`${config.configPath}: valid. Environment '${config.environment}'.`);
  printPolicy(config, out);
  if (config.targetsWithoutWrite.length > 0) {
    out("");
    out(
      `An executor would refuse to start: no write block for ${config.targetsWithoutWrite.map((t) => `targets.${t}.write`).join(", ")} (it needs a write credential for every target). 'countersign doctor --role executor' checks it with this environment.`,
    );
  }
  return 0;
}

/**
 * The file to check: the argument, else COUNTERSIGN_CONFIG, else ./countersign.yml; named by
 * whichever the person used. `usage` is how to name one on the command line.
 */
export function resolveConfigFile(argument: string | undefined, env: NodeJS.ProcessEnv, usage: string): string {
  if (argument !== undefined) {
    const file = path.resolve(argument);
    if (!existsSync(file)) throw new ConfigError("command line", [{ key: argument, message: `no such file (${file})` }]);
    return file;
  }
  if (env.COUNTERSIGN_CONFIG) return env.COUNTERSIGN_CONFIG; // loadConfig names COUNTERSIGN_CONFIG if it is missing
  const file = path.resolve("countersign.yml");
  if (!existsSync(file)) {
    throw new ConfigError("command line", [
      {
        key: "COUNTERSIGN_CONFIG",
        message: `is not set and ${file} does not exist; name the file to check (${usage}), set COUNTERSIGN_CONFIG, or copy countersign.example.yml to ./countersign.yml`,
      },
    ]);
  }
  return file;
}

function printPolicy(config: CheckConfig, out: (line: string) => void): void {
  // Each target's own keys are described by its adapter; no target is opened.
  const registry = defaultRegistry();
  const readers = config.browser.readers;
  out(
    `Who may read plans: admins (${config.admins.join(", ") || "none"}) read all; each plan's approvers read it; ` +
      (readers === undefined ? "anyone signed in reads all (no browser.readers)" : `besides them only browser.readers (${readers.join(", ") || "nobody"})`),
  );
  printLimits(config, out);
  const targets = Object.entries(config.targets);
  if (targets.length === 0) out("No targets: agents can propose nothing yet.");
  for (const [name, target] of targets) {
    const policy = effectivePolicy(config.defaults, [target.policy]);
    out("");
    const { reaches, lines } = registry.find(target.adapter).describe(name, target);
    out(`target ${name} (${target.adapter} ${reaches})`);
    const rule = (key: "approvers" | "requiredApprovals" | "ttl" | "grantTtl") =>
      target.policy?.[key] !== undefined ? `targets.${name}.policy.${key}` : `defaults.${key}`;
    out(
      `  approvers:  ${policy.approvers.join(", ")} (${rule("approvers")}); ${policy.requiredApprovals} of ${policy.approvers.length} needed (${rule("requiredApprovals")})`,
    );
    out(`  ttl:        ${policy.ttl.default} s by default, at most ${policy.ttl.max} s; grant valid ${policy.grantTtl} s after approval`);
    out(`  review in:  ${target.policy?.reviewChannel ?? config.slack.reviewChannel ?? "(no Slack channel: browser only)"}`);
    for (const line of lines) out(`  ${line}`);
    out(
      `  watch:      ${target.watch.intervalSeconds === 0 ? "off: open plans are re-checked only at Approve and by the executor" : `re-read every ${target.watch.intervalSeconds} s while a plan on it is pending or approved`} (targets.${name}.watch.intervalSeconds)`,
    );
    out(
      `  executor:   ${config.targetsWithoutWrite.includes(name) ? "CANNOT apply — no write block (targets." + name + ".write)" : `write ${target.adapter === "postgres.row" ? "connection" : "headers"} configured`}`,
    );
  }
}

/** Each agent's limits as submit applies them (agent-limits.ts), with the key each comes from. */
function printLimits(config: CheckConfig, out: (line: string) => void): void {
  const line = (limits: AgentLimits) =>
    `${limits.plansPerMinute} plans a minute (${limits.keys.plansPerMinute}), ${limits.maxPending} pending or approved at once (${limits.keys.maxPending})`;
  out(`Agent limits: each agent ${line(limitsOf(config.limits, ""))}; beyond them a submission is refused with 429 rate_limited`);
  for (const name of Object.keys(config.limits?.agents ?? {})) out(`  agent ${name}: ${line(limitsOf(config.limits, name))}`);
}
