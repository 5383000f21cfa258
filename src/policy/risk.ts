import type { TargetPolicy } from "./effective-policy.ts";

export const RISK_LEVELS = ["low", "medium", "high"] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];

export interface RiskRules {
  /** The target's (or the defaults') level, and the config key it came from. */
  risk: { level: RiskLevel; rule: string };
  /** Levels per op (in the target's adapter's terms), overriding the target's, with their config keys. */
  byOp: Partial<Record<string, { level: RiskLevel; rule: string }>>;
}

/** How risky a plan is: its riskiest action, and the rule that made it so (shown to reviewers). */
export function assessRisk(actions: readonly { op: string; rules: RiskRules }[]): { level: RiskLevel; rule: string } {
  const found = actions.map(({ op, rules }) => rules.byOp[op] ?? rules.risk);
  if (found.length === 0) return { level: "low", rule: "defaults.risk" };
  return found.reduce((worst, r) => (RISK_LEVELS.indexOf(r.level) > RISK_LEVELS.indexOf(worst.level) ? r : worst));
}

/** High-risk plans may need more approvals and get less time. Never loosens a policy. */
export function applyRisk(
  policy: TargetPolicy,
  level: RiskLevel,
  high: { requiredApprovals?: number | undefined; ttlMax?: number | undefined } | undefined,
): TargetPolicy {
  if (level !== "high" || !high) return policy;
  const ttlMax = Math.min(policy.ttl.max, high.ttlMax ?? policy.ttl.max);
  return {
    ...policy,
    requiredApprovals: Math.max(policy.requiredApprovals, high.requiredApprovals ?? 0),
    ttl: { max: ttlMax, default: Math.min(policy.ttl.default, ttlMax) },
  };
}
