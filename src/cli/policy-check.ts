import path from "node:path";
import { loadConfig } from "../config/load.ts";
import { effectivePolicy } from "../policy/effective-policy.ts";

/**
 * `countersign policy check [file]`: validates a config (throwing ConfigError naming every bad
 * key) and prints the policy each target lives under, as plans will record it.
 */
export function policyCheck(args: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): void {
  const file = args[0] ?? env.COUNTERSIGN_CONFIG ?? "countersign.yml";
  const config = loadConfig({ env: { ...env, COUNTERSIGN_CONFIG: path.resolve(file) }, role: "check" });
  out(`${config.configPath}: valid. Environment '${config.environment}'.`);
  const readers = config.browser.readers;
  out(`Who may read plans: admins (${config.admins.join(", ") || "none"}) read all; each plan's approvers read it; `
    + (readers === undefined ? "anyone signed in reads all (no browser.readers)" : `besides them only browser.readers (${readers.join(", ") || "nobody"})`));
  const targets = Object.entries(config.targets);
  if (targets.length === 0) out("No targets: agents can propose nothing yet.");
  for (const [name, target] of targets) {
    const policy = effectivePolicy(config.defaults, [target.policy]);
    out("");
    out(`target ${name} (${target.adapter} ${target.baseUrl})`);
    const rule = (key: "approvers" | "requiredApprovals" | "ttl" | "grantTtl") => (target.policy?.[key] !== undefined ? `targets.${name}.policy.${key}` : `defaults.${key}`);
    out(`  approvers:  ${policy.approvers.join(", ")} (${rule("approvers")}); ${policy.requiredApprovals} of ${policy.approvers.length} needed (${rule("requiredApprovals")})`);
    out(`  ttl:        ${policy.ttl.default} s by default, at most ${policy.ttl.max} s; grant valid ${policy.grantTtl} s after approval`);
    out(`  review in:  ${target.policy?.reviewChannel ?? config.slack.reviewChannel ?? "(no Slack channel: browser only)"}`);
    if (target.allow) {
      out(`  may propose: ops ${target.allow.ops.join(", ")} on ${target.allow.paths.join(", ")}`
        + `${target.allow.maxActions ? `, at most ${target.allow.maxActions} actions` : ""}${target.allow.maxBodyBytes ? `, bodies ≤ ${target.allow.maxBodyBytes} bytes` : ""}`);
    } else {
      out("  may propose: NOTHING — no 'allow' block, so every plan for this target is refused (deny by default)");
    }
  }
}
