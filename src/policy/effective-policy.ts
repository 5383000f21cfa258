import type { z } from "zod";
import type { PolicyDefaults, PolicyOverride } from "./policy-config.ts";

export type PolicyDefaultsConfig = z.infer<typeof PolicyDefaults>;
export type PolicyOverrideConfig = z.infer<typeof PolicyOverride>;

export interface TargetPolicy {
  approvers: string[];
  requiredApprovals: number;
  ttl: { default: number; max: number };
  grantTtl: number;
  /** Whether the plan may be reviewed in a batch of alike plans: only if every target allows it. */
  batch: boolean;
  /** Whether reviewers may edit the plan's values: only if every target allows it. */
  edits: boolean;
  /** Whether a delegate may act for an approver on the plan: only if every target allows it. */
  delegation: boolean;
}

/**
 * The policy a plan lives under. Each target's policy is its override on top of the defaults;
 * a plan touching several targets must satisfy all of them at once: only people who may
 * approve every target count, the largest quorum applies, the shortest TTL bounds it, and it is
 * batched only if every target allows it.
 */
export function effectivePolicy(defaults: PolicyDefaultsConfig, overrides: (PolicyOverrideConfig | undefined)[]): TargetPolicy {
  const perTarget = (overrides.length > 0 ? overrides : [undefined]).map((o) => ({
    approvers: o?.approvers ?? defaults.approvers,
    requiredApprovals: o?.requiredApprovals ?? defaults.requiredApprovals,
    ttl: o?.ttl ?? defaults.ttl,
    grantTtl: o?.grantTtl ?? defaults.grantTtl,
    batch: o?.batch ?? defaults.batch,
    edits: o?.edits ?? defaults.edits,
    delegation: o?.delegation ?? defaults.delegation,
  }));
  const [first, ...rest] = perTarget as [TargetPolicy, ...TargetPolicy[]];
  return rest.reduce<TargetPolicy>(
    (acc, p) => ({
      approvers: acc.approvers.filter((a) => p.approvers.includes(a)),
      requiredApprovals: Math.max(acc.requiredApprovals, p.requiredApprovals),
      ttl: { default: Math.min(acc.ttl.default, p.ttl.default), max: Math.min(acc.ttl.max, p.ttl.max) },
      grantTtl: Math.min(acc.grantTtl, p.grantTtl),
      batch: acc.batch && p.batch,
      edits: acc.edits && p.edits,
      delegation: acc.delegation && p.delegation,
    }),
    { ...first, approvers: [...new Set(first.approvers)].sort() },
  );
}
