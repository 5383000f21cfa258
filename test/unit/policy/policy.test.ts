import { describe, expect, it } from "vitest";
import { effectivePolicy, type PolicyDefaultsConfig, type PolicyOverrideConfig, type TargetPolicy } from "../../../src/policy/effective-policy.ts";
import { quorumMet } from "../../../src/policy/approvers.ts";
import { resolveTtl } from "../../../src/policy/ttl.ts";

const DEFAULTS: PolicyDefaultsConfig = {
  approvers: ["U0CAROL", "U0ALICE", "U0BOB"],
  requiredApprovals: 1,
  ttl: { default: 900, max: 86_400 },
  grantTtl: 600,
  reminders: [],
  risk: "low",
  batch: true,
  edits: true,
  delegation: true,
};

describe("effectivePolicy", () => {
  it.each<[name: string, defaults: PolicyDefaultsConfig, overrides: (PolicyOverrideConfig | undefined)[], expected: TargetPolicy]>([
    [
      "defaults only (no targets), approvers sorted",
      DEFAULTS,
      [],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "one target without an override uses the defaults",
      DEFAULTS,
      [undefined],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "one target with an empty override uses the defaults",
      DEFAULTS,
      [{}],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "per-target override replaces every field it sets",
      DEFAULTS,
      [{ approvers: ["U0DAVE", "U0EVE"], requiredApprovals: 2, ttl: { default: 60, max: 600 } }],
      { approvers: ["U0DAVE", "U0EVE"], requiredApprovals: 2, ttl: { default: 60, max: 600 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "per-target override of approvers only keeps the other defaults",
      DEFAULTS,
      [{ approvers: ["U0DAVE"] }],
      { approvers: ["U0DAVE"], requiredApprovals: 1, ttl: { default: 900, max: 86_400 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "per-target override of requiredApprovals only keeps the default approvers",
      DEFAULTS,
      [{ requiredApprovals: 3 }],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 3,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "an explicit empty approver list overrides the defaults (nobody may approve)",
      DEFAULTS,
      [{ approvers: [] }],
      { approvers: [], requiredApprovals: 1, ttl: { default: 900, max: 86_400 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "duplicates are removed and approvers sorted",
      { ...DEFAULTS, approvers: ["U0BOB", "U0ALICE", "U0BOB", "U0ALICE", "U0AARON"] },
      [undefined],
      {
        approvers: ["U0AARON", "U0ALICE", "U0BOB"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "two targets: approvers intersect, the larger quorum and the shorter TTLs apply",
      DEFAULTS,
      [
        { approvers: ["U0ALICE", "U0BOB", "U0CAROL"], requiredApprovals: 1, ttl: { default: 600, max: 3_600 } },
        { approvers: ["U0DAVE", "U0CAROL", "U0ALICE"], requiredApprovals: 2, ttl: { default: 900, max: 1_800 } },
      ],
      { approvers: ["U0ALICE", "U0CAROL"], requiredApprovals: 2, ttl: { default: 600, max: 1_800 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "three targets: the intersection narrows each time, max of quorums, min of each TTL bound",
      DEFAULTS,
      [
        { approvers: ["U0E", "U0D", "U0C", "U0B", "U0A"], requiredApprovals: 1, ttl: { default: 300, max: 7_200 } },
        { approvers: ["U0A", "U0B", "U0C", "U0D"], requiredApprovals: 3 },
        { approvers: ["U0D", "U0B", "U0Z"], requiredApprovals: 2, ttl: { default: 1_200, max: 1_200 } },
      ],
      { approvers: ["U0B", "U0D"], requiredApprovals: 3, ttl: { default: 300, max: 1_200 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "a target without an override mixes with one that has it",
      DEFAULTS,
      [undefined, { approvers: ["U0BOB", "U0DAVE"], requiredApprovals: 2 }],
      { approvers: ["U0BOB"], requiredApprovals: 2, ttl: { default: 900, max: 86_400 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "disjoint approver lists leave nobody",
      DEFAULTS,
      [{ approvers: ["U0ALICE"] }, { approvers: ["U0BOB"] }],
      { approvers: [], requiredApprovals: 1, ttl: { default: 900, max: 86_400 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "duplicates in a later target do not duplicate the result",
      DEFAULTS,
      [{ approvers: ["U0BOB", "U0ALICE"] }, { approvers: ["U0ALICE", "U0ALICE", "U0BOB", "U0BOB"] }],
      { approvers: ["U0ALICE", "U0BOB"], requiredApprovals: 1, ttl: { default: 900, max: 86_400 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "the same target twice is the same as once",
      DEFAULTS,
      [
        { approvers: ["U0BOB", "U0ALICE"], requiredApprovals: 2 },
        { approvers: ["U0BOB", "U0ALICE"], requiredApprovals: 2 },
      ],
      { approvers: ["U0ALICE", "U0BOB"], requiredApprovals: 2, ttl: { default: 900, max: 86_400 }, grantTtl: 600, batch: true, edits: true, delegation: true },
    ],
    [
      "one target keeping its plans out of batches keeps the plan out",
      DEFAULTS,
      [undefined, { batch: false }],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: false,
        edits: true,
        delegation: true,
      },
    ],
    [
      "a target allows batches where the defaults do not",
      { ...DEFAULTS, batch: false },
      [{ batch: true }],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "one target keeping reviewers from editing keeps the plan's values as sent",
      DEFAULTS,
      [undefined, { edits: false }],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: false,
        delegation: true,
      },
    ],
    [
      "a target allows edits where the defaults do not",
      { ...DEFAULTS, edits: false },
      [{ edits: true }],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: true,
      },
    ],
    [
      "one target forbidding delegates keeps them off the plan",
      DEFAULTS,
      [undefined, { delegation: false }],
      {
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        ttl: { default: 900, max: 86_400 },
        grantTtl: 600,
        batch: true,
        edits: true,
        delegation: false,
      },
    ],
  ])("%s", (_name, defaults, overrides, expected) => {
    expect(effectivePolicy(defaults, overrides)).toStrictEqual(expected);
  });

  it("does not depend on the order of the targets", () => {
    const a: PolicyOverrideConfig = { approvers: ["U0C", "U0A", "U0B"], requiredApprovals: 2, ttl: { default: 100, max: 5_000 } };
    const b: PolicyOverrideConfig = { approvers: ["U0B", "U0C", "U0D"], requiredApprovals: 1, ttl: { default: 200, max: 400 } };
    expect(effectivePolicy(DEFAULTS, [a, b])).toStrictEqual(effectivePolicy(DEFAULTS, [b, a]));
  });

  it("does not mutate the defaults or the overrides", () => {
    const defaults = structuredClone(DEFAULTS);
    const overrides: PolicyOverrideConfig[] = [{ approvers: ["U0B", "U0A", "U0A"] }, { approvers: ["U0A"] }];
    const overridesBefore = structuredClone(overrides);
    effectivePolicy(defaults, overrides);
    expect(defaults).toStrictEqual(DEFAULTS);
    expect(overrides).toStrictEqual(overridesBefore);
  });
});

describe("resolveTtl", () => {
  const bounds = { default: 900, max: 3_600 };
  it.each<[name: string, requested: number | undefined, expected: { seconds: number } | RegExp]>([
    ["not requested → the default", undefined, { seconds: 900 }],
    ["within bounds", 1_200, { seconds: 1_200 }],
    ["exactly the maximum", 3_600, { seconds: 3_600 }],
    ["exactly the minimum of 10 s", 10, { seconds: 10 }],
    ["one second over the maximum", 3_601, /exceeds the policy maximum of 3600 seconds/],
    ["far over the maximum", 1_000_000, /ttlSeconds 1000000 exceeds/],
    ["too small to decide in time", 9, /at least 10 seconds/],
    ["one second", 1, /at least 10 seconds/],
  ])("%s", (_name, requested, expected) => {
    const result = resolveTtl(requested, bounds);
    if (expected instanceof RegExp) {
      expect(result).not.toHaveProperty("seconds");
      expect((result as { error: string }).error).toMatch(expected);
    } else {
      expect(result).toStrictEqual(expected);
    }
  });

  it("uses the given bounds, not fixed ones", () => {
    expect(resolveTtl(undefined, { default: 42, max: 50 })).toStrictEqual({ seconds: 42 });
    expect(resolveTtl(51, { default: 42, max: 50 })).toHaveProperty("error");
  });
});

describe("quorumMet", () => {
  it.each<[name: string, approvals: string[], required: number, met: boolean]>([
    ["no approvals, one required", [], 1, false],
    ["one approval, one required", ["U0ALICE"], 1, true],
    ["one approval, two required", ["U0ALICE"], 2, false],
    ["two distinct approvals, two required", ["U0ALICE", "U0BOB"], 2, true],
    ["the same person twice counts once", ["U0ALICE", "U0ALICE"], 2, false],
    ["duplicates plus one more meet two", ["U0ALICE", "U0ALICE", "U0BOB"], 2, true],
    ["three distinct, two required (more than enough)", ["U0ALICE", "U0BOB", "U0CAROL"], 2, true],
    ["five clicks by two people, three required", ["U0A", "U0B", "U0A", "U0B", "U0A"], 3, false],
  ])("%s → %s", (_name, approvals, required, met) => {
    expect(quorumMet(approvals, { requiredApprovals: required })).toBe(met);
  });
});
