import { describe, expect, it } from "vitest";
import { actingFor, whyMayNot, type Act, type Delegator, type Person, type PlanFacts, type RefusalCode } from "../../../src/policy/may-act.ts";

const NOW = new Date("2026-12-02T12:00:00.000Z");
const HASH = "sha256:" + "a".repeat(64);
const LATER = new Date(NOW.getTime() + 86_400_000);

/** Pending, approvers Alice, Bob, Carol and the leads group, quorum 2, requested for Rita. */
function plan(overrides: Partial<PlanFacts> = {}): PlanFacts {
  return {
    status: "pending",
    expiresAt: new Date(NOW.getTime() + 60_000),
    hash: HASH,
    requesters: ["U0RITA"],
    policy: { approvers: ["U0ALICE", "U0BOB", "U0CAROL", "S0LEADS"], requiredApprovals: 2 },
    approvals: [],
    ...overrides,
  };
}
const away = (userId: string, endsAt = LATER, memberOf: string[] = []): Delegator => ({ userId, memberOf, endsAt });
const person = (userId: string, actsFor: Delegator[] = [], memberOf: string[] = []): Person => ({ userId, memberOf, actsFor });
const approve: Act = { verb: "decide", verdict: "approve", hash: HASH };
const approveFor = (delegator: string): Act => ({ ...approve, for: delegator });

describe("deciding for someone away", () => {
  it.each<[name: string, who: Person, facts: PlanFacts, act: Act, expected: RefusalCode | undefined, actsFor: string | undefined]>([
    ["a delegate who is no approver acts for the approver", person("U0DAVE", [away("U0ALICE")]), plan(), approve, undefined, "U0ALICE"],
    ["an approver acts as themselves first", person("U0BOB", [away("U0ALICE")]), plan(), approve, undefined, undefined],
    ["an approver may act for a delegator when they say so", person("U0BOB", [away("U0ALICE")]), plan(), approveFor("U0ALICE"), undefined, "U0ALICE"],
    ["with the delegator's groups, not their own", person("U0DAVE", [away("U0LENA", LATER, ["S0LEADS"])]), plan(), approve, undefined, "U0LENA"],
    ["a delegator who is no approver gives nothing", person("U0DAVE", [away("U0MALLORY")]), plan(), approve, "not_an_approver", undefined],
    ["for someone they hold no delegation from", person("U0DAVE", [away("U0ALICE")]), plan(), approveFor("U0CAROL"), "not_an_approver", undefined],
    [
      "the first delegator still open, when another already counts",
      person("U0DAVE", [away("U0ALICE"), away("U0CAROL")]),
      plan({ approvals: ["U0ALICE"] }),
      approve,
      undefined,
      "U0CAROL",
    ],
    [
      "not where the plan's policy forbids delegates",
      person("U0DAVE", [away("U0ALICE")]),
      plan({ policy: { ...plan().policy, delegation: false } }),
      approve,
      "not_an_approver",
      undefined,
    ],
    ["not once the delegation has ended", person("U0DAVE", [away("U0ALICE", NOW)]), plan(), approve, "delegation_ended", undefined],
    ["a millisecond before it ends", person("U0DAVE", [away("U0ALICE", new Date(NOW.getTime() + 1))]), plan(), approve, undefined, "U0ALICE"],
    ["an approver whose delegation ended still acts as themselves", person("U0BOB", [away("U0ALICE", NOW)]), plan(), approve, undefined, undefined],
    // Requesters, and anyone acting for one.
    [
      "not for a requester",
      person("U0DAVE", [away("U0RITA")]),
      plan({ policy: { ...plan().policy, approvers: ["U0RITA", "U0BOB"] } }),
      approve,
      "self_approval",
      undefined,
    ],
    ["not for a requester when they say so", person("U0BOB", [away("U0RITA")]), plan(), approveFor("U0RITA"), "self_approval", undefined],
    ["a requester acting for an approver", person("U0RITA", [away("U0ALICE")]), plan(), approve, "self_approval", undefined],
    ["a requester's delegate still decides in their own right", person("U0BOB", [away("U0RITA")]), plan(), approve, undefined, undefined],
    [
      "not for a requester, even to reject",
      person("U0DAVE", [away("U0RITA")]),
      plan({ policy: { ...plan().policy, approvers: ["U0RITA"] } }),
      { ...approve, verdict: "reject" },
      "self_approval",
      undefined,
    ],
    // Each person who clicked counts once; each person acted for counts once.
    [
      "Bob, having approved as himself, for Alice",
      person("U0BOB", [away("U0ALICE")]),
      plan({ approvals: ["U0BOB"] }),
      approveFor("U0ALICE"),
      "already_voted",
      undefined,
    ],
    [
      "Bob, having approved as himself, clicking again",
      person("U0BOB", [away("U0ALICE")]),
      plan({ approvals: ["U0BOB"] }),
      approve,
      "already_voted",
      undefined,
    ],
    ["Alice, whom Bob approved for", person("U0ALICE"), plan({ approvals: ["U0BOB"], actedFor: ["U0ALICE"] }), approve, "already_voted", undefined],
    [
      "another delegate of Alice, whom Bob approved for",
      person("U0DAVE", [away("U0ALICE")]),
      plan({ approvals: ["U0BOB"], actedFor: ["U0ALICE"] }),
      approve,
      "already_voted",
      undefined,
    ],
    [
      "Bob for Alice, when Alice approved herself",
      person("U0BOB", [away("U0ALICE")]),
      plan({ approvals: ["U0ALICE"] }),
      approveFor("U0ALICE"),
      "already_voted",
      undefined,
    ],
    [
      "Dave for Carol, having approved for Alice",
      person("U0DAVE", [away("U0ALICE"), away("U0CAROL")]),
      plan({ approvals: ["U0DAVE"], actedFor: ["U0ALICE"] }),
      approveFor("U0CAROL"),
      "already_voted",
      undefined,
    ],
    [
      "rejecting after approving for someone",
      person("U0DAVE", [away("U0ALICE")]),
      plan({ approvals: ["U0DAVE"], actedFor: ["U0ALICE"] }),
      { ...approve, verdict: "reject" },
      undefined,
      "U0ALICE",
    ],
  ])("%s → %s", (_name, who, facts, act, expected, actsFor) => {
    expect(whyMayNot(who, facts, act, NOW)?.code).toBe(expected);
    if (expected === undefined && act.verb === "decide") expect(actingFor(who, facts, act, NOW)).toBe(actsFor);
  });

  it("says who would count twice, and for whom a delegate would have acted", () => {
    expect(whyMayNot(person("U0ALICE"), plan({ approvals: ["U0BOB"], actedFor: ["U0ALICE"] }), approve, NOW)).toMatchObject({
      code: "already_voted",
      counted: "U0ALICE",
    });
    expect(whyMayNot(person("U0BOB", [away("U0ALICE")]), plan({ approvals: ["U0ALICE"] }), approveFor("U0ALICE"), NOW)).toMatchObject({ counted: "U0ALICE" });
    expect(whyMayNot(person("U0DAVE", [away("U0RITA")]), plan({ policy: { ...plan().policy, approvers: ["U0RITA"] } }), approve, NOW)).toEqual({
      code: "self_approval",
      for: "U0RITA",
    });
    expect(whyMayNot(person("U0DAVE", [away("U0ALICE", NOW)]), plan(), approve, NOW)).toEqual({ code: "delegation_ended", delegator: "U0ALICE", endsAt: NOW });
  });

  it("the plan's state comes first, whoever acts for whom", () => {
    expect(whyMayNot(person("U0DAVE", [away("U0ALICE", NOW)]), plan({ status: "approved" }), approve, NOW)?.code).toBe("already_decided");
    expect(whyMayNot(person("U0DAVE", [away("U0RITA")]), plan({ expiresAt: NOW }), approve, NOW)?.code).toBe("plan_expired");
  });
});

describe("revoking and reading for someone away", () => {
  const revoke: Act = { verb: "revoke", admins: ["U0ADMIN"] };
  const approved = plan({ status: "approved", approvals: ["U0ALICE", "U0BOB"] });
  it.each<[name: string, who: Person, facts: PlanFacts, expected: RefusalCode | undefined, actsFor: string | undefined]>([
    ["a delegate of an approver", person("U0DAVE", [away("U0ALICE")]), approved, undefined, "U0ALICE"],
    ["a delegate of someone who may not", person("U0DAVE", [away("U0MALLORY")]), approved, "not_a_revoker", undefined],
    [
      "a delegate of the requester",
      person("U0DAVE", [away("U0RITA")]),
      plan({ status: "approved", policy: { ...approved.policy, approvers: ["U0RITA"] } }),
      "not_a_revoker",
      undefined,
    ],
    ["a delegate whose delegation ended", person("U0DAVE", [away("U0ALICE", NOW)]), approved, "delegation_ended", undefined],
    [
      "not through an admin's delegation: approvals pass on, administration does not",
      person("U0DAVE", [away("U0ADMIN")]),
      approved,
      "not_a_revoker",
      undefined,
    ],
    [
      "not where the policy forbids delegates",
      person("U0DAVE", [away("U0ALICE")]),
      plan({ ...approved, policy: { ...approved.policy, delegation: false } }),
      "not_a_revoker",
      undefined,
    ],
  ])("%s → %s", (_name, who, facts, expected, actsFor) => {
    expect(whyMayNot(who, facts, revoke, NOW)?.code).toBe(expected);
    if (expected === undefined) expect(actingFor(who, facts, revoke as Extract<Act, { verb: "revoke" }>, NOW)).toBe(actsFor);
  });

  it("a delegate reads what the delegator may, while the delegation lasts", () => {
    const read: Act = { verb: "read", rights: { readers: [], admins: [] } };
    expect(whyMayNot(person("U0DAVE", [away("U0ALICE")]), plan(), read, NOW)).toBeUndefined();
    expect(whyMayNot(person("U0DAVE", [away("U0ALICE", NOW)]), plan(), read, NOW)?.code).toBe("not_a_reader");
    expect(whyMayNot(person("U0DAVE", [away("U0MALLORY")]), plan(), read, NOW)?.code).toBe("not_a_reader");
  });
});
