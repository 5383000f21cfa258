import { describe, expect, it } from "vitest";
import { applyRisk, assessRisk, type RiskRules } from "../../../src/policy/risk.ts";

const crm: RiskRules = { risk: { level: "low", rule: "defaults.risk" }, byOp: { delete: { level: "high", rule: "targets.crm.policy.riskByOp.delete" } } };
const vault: RiskRules = { risk: { level: "medium", rule: "targets.vault.policy.risk" }, byOp: {} };

describe("assessRisk: the riskiest action decides, and says which rule", () => {
  it.each<[string, Parameters<typeof assessRisk>[0], { level: string; rule: string }]>([
    ["a low merge", [{ op: "merge", rules: crm }], { level: "low", rule: "defaults.risk" }],
    ["a delete made high by op", [{ op: "delete", rules: crm }], { level: "high", rule: "targets.crm.policy.riskByOp.delete" }],
    ["a medium target", [{ op: "merge", rules: vault }], { level: "medium", rule: "targets.vault.policy.risk" }],
    [
      "the riskiest of several",
      [
        { op: "merge", rules: crm },
        { op: "merge", rules: vault },
        { op: "delete", rules: crm },
      ],
      { level: "high", rule: "targets.crm.policy.riskByOp.delete" },
    ],
    [
      "ties keep the first",
      [
        { op: "merge", rules: vault },
        { op: "create", rules: vault },
      ],
      { level: "medium", rule: "targets.vault.policy.risk" },
    ],
  ])("%s", (_name, actions, expected) => {
    expect(assessRisk(actions)).toEqual(expected);
  });
});

describe("applyRisk: high risk raises the quorum and shortens the TTL, never the reverse", () => {
  const policy = {
    approvers: ["U0A", "U0B", "U0C"],
    requiredApprovals: 1,
    ttl: { default: 900, max: 3600 },
    grantTtl: 600,
    batch: true,
    edits: true,
    delegation: true,
  };
  it.each<[string, "low" | "medium" | "high", Parameters<typeof applyRisk>[2], { requiredApprovals: number; ttl: { default: number; max: number } }]>([
    ["low is untouched", "low", { requiredApprovals: 2, ttlMax: 300 }, { requiredApprovals: 1, ttl: { default: 900, max: 3600 } }],
    ["high without a rule is untouched", "high", undefined, { requiredApprovals: 1, ttl: { default: 900, max: 3600 } }],
    ["high raises and shortens", "high", { requiredApprovals: 2, ttlMax: 300 }, { requiredApprovals: 2, ttl: { default: 300, max: 300 } }],
    ["high never lowers a stricter policy", "high", { requiredApprovals: 1, ttlMax: 7200 }, { requiredApprovals: 1, ttl: { default: 900, max: 3600 } }],
  ])("%s", (_name, level, high, expected) => {
    expect(applyRisk(policy, level, high)).toMatchObject(expected);
  });
});
