import { describe, expect, it } from "vitest";
import { approverGroups, isUserGroup, names, userGroupsIn } from "../../../src/policy/approvers.ts";
import { whyMayNot, type Act, type PlanFacts, type ReadRights, type RefusalCode } from "../../../src/policy/may-act.ts";

const NOW = new Date("2026-12-02T12:00:00.000Z");
const HASH = "sha256:" + "a".repeat(64);
const OTHER_HASH = "sha256:" + "b".repeat(64);

/** Pending, expiring in a minute, approvers Alice, Bob and the reviewers group, requested for Rita. */
function plan(overrides: Partial<PlanFacts> = {}): PlanFacts {
  return {
    status: "pending",
    expiresAt: new Date(NOW.getTime() + 60_000),
    hash: HASH,
    requesters: ["U0RITA"],
    policy: { approvers: ["U0ALICE", "U0BOB", "S0REVIEWERS"], requiredApprovals: 2 },
    approvals: [],
    ...overrides,
  };
}
const person = (userId: string, memberOf: string[] = []) => ({ userId, memberOf });
const code = (p: ReturnType<typeof person>, facts: PlanFacts, act: Act, now = NOW): RefusalCode | undefined => whyMayNot(p, facts, act, now)?.code;

describe("decide", () => {
  const buttons: Act = { verb: "decide" };
  it.each<[name: string, who: ReturnType<typeof person>, facts: PlanFacts, act: Act, expected: RefusalCode | undefined]>([
    ["a listed approver, pending, in time", person("U0ALICE"), plan(), buttons, undefined],
    ["a member of a listed group", person("U0GINA", ["S0REVIEWERS"]), plan(), buttons, undefined],
    ["a member of an unlisted group", person("U0GINA", ["S0OTHERS"]), plan(), buttons, "not_an_approver"],
    [
      "a user id that only looks like a listed group",
      person("S0REVIEWERS"),
      plan({ policy: { approvers: ["U0ALICE"], requiredApprovals: 1 } }),
      buttons,
      "not_an_approver",
    ],
    ["nobody listed", person("U0MALLORY"), plan(), buttons, "not_an_approver"],
    ["ids compare exactly (case)", person("u0alice"), plan(), buttons, "not_an_approver"],
    ["an empty approver list", person("U0ALICE"), plan({ policy: { approvers: [], requiredApprovals: 1 } }), buttons, "not_an_approver"],
    [
      "the requester, also a listed approver",
      person("U0RITA"),
      plan({ policy: { approvers: ["U0RITA", "U0BOB"], requiredApprovals: 1 } }),
      buttons,
      "self_approval",
    ],
    ["the requester through a group", person("U0RITA", ["S0REVIEWERS"]), plan(), buttons, "self_approval"],
    ["no requester recorded", person("U0ALICE"), plan({ requesters: [] }), buttons, undefined],
    ["the reviewer whose edit made this version", person("U0ALICE"), plan({ requesters: ["U0RITA", "U0ALICE"] }), buttons, "self_approval"],
    ["already approved: no buttons", person("U0ALICE"), plan({ approvals: ["U0ALICE"] }), buttons, "already_voted"],
    [
      "already approved, approving again",
      person("U0ALICE"),
      plan({ approvals: ["U0ALICE"] }),
      { verb: "decide", verdict: "approve", hash: HASH },
      "already_voted",
    ],
    [
      "already approved, rejecting (a change of mind)",
      person("U0ALICE"),
      plan({ approvals: ["U0ALICE"] }),
      { verb: "decide", verdict: "reject", hash: HASH },
      undefined,
    ],
    ["someone else approved", person("U0BOB"), plan({ approvals: ["U0ALICE"] }), buttons, undefined],
    ["the hash the person saw", person("U0ALICE"), plan(), { verb: "decide", verdict: "approve", hash: HASH }, undefined],
    ["another hash", person("U0ALICE"), plan(), { verb: "decide", verdict: "approve", hash: OTHER_HASH }, "hash_mismatch"],
    ["an empty hash", person("U0ALICE"), plan(), { verb: "decide", verdict: "approve", hash: "" }, "hash_mismatch"],
    ["approved plan", person("U0ALICE"), plan({ status: "approved" }), buttons, "already_decided"],
    ["rejected plan", person("U0ALICE"), plan({ status: "rejected" }), buttons, "already_decided"],
    ["swept to expired", person("U0ALICE"), plan({ status: "expired" }), buttons, "plan_expired"],
    ["past expiry, not yet swept", person("U0ALICE"), plan({ expiresAt: new Date(NOW.getTime() - 1) }), buttons, "plan_expired"],
    ["at the exact expiry instant", person("U0ALICE"), plan({ expiresAt: NOW }), buttons, "plan_expired"],
    ["a millisecond before expiry", person("U0ALICE"), plan({ expiresAt: new Date(NOW.getTime() + 1) }), buttons, undefined],
  ])("%s → %s", (_name, who, facts, act, expected) => {
    expect(code(who, facts, act)).toBe(expected);
  });

  describe("refusal order: expired, decided, hash, self, approver, voted", () => {
    const wrong: Act = { verb: "decide", verdict: "approve", hash: OTHER_HASH };
    it.each<[name: string, who: ReturnType<typeof person>, facts: PlanFacts, act: Act, expected: RefusalCode]>([
      ["expired + decided-looking + wrong hash + requester", person("U0RITA"), plan({ status: "expired" }), wrong, "plan_expired"],
      ["expired beats everything when still pending", person("U0MALLORY"), plan({ expiresAt: NOW, approvals: ["U0MALLORY"] }), wrong, "plan_expired"],
      ["decided + wrong hash + requester", person("U0RITA"), plan({ status: "approved" }), wrong, "already_decided"],
      ["wrong hash + requester", person("U0RITA"), plan(), wrong, "hash_mismatch"],
      ["wrong hash + outsider", person("U0MALLORY"), plan(), wrong, "hash_mismatch"],
      ["requester who is not an approver", person("U0RITA", []), plan(), { verb: "decide" }, "self_approval"],
      ["outsider who somehow has a vote recorded", person("U0MALLORY"), plan({ approvals: ["U0MALLORY"] }), { verb: "decide" }, "not_an_approver"],
    ])("%s → %s", (_name, who, facts, act, expected) => {
      expect(code(who, facts, act)).toBe(expected);
    });
  });

  it("a refusal carries the facts its door explains it with", () => {
    expect(whyMayNot(person("U0MALLORY"), plan(), { verb: "decide" }, NOW)).toEqual({
      code: "not_an_approver",
      approvers: ["U0ALICE", "U0BOB", "S0REVIEWERS"],
      requiredApprovals: 2,
    });
    expect(whyMayNot(person("U0ALICE"), plan({ approvals: ["U0ALICE"] }), { verb: "decide" }, NOW)).toEqual({
      code: "already_voted",
      approvals: ["U0ALICE"],
      requiredApprovals: 2,
    });
    expect(whyMayNot(person("U0ALICE"), plan({ status: "rejected" }), { verb: "decide" }, NOW)).toEqual({ code: "already_decided", status: "rejected" });
    expect(whyMayNot(person("U0ALICE"), plan(), { verb: "decide", hash: OTHER_HASH }, NOW)).toEqual({ code: "hash_mismatch", expected: HASH, got: OTHER_HASH });
    const expiresAt = new Date(NOW.getTime() - 5);
    expect(whyMayNot(person("U0ALICE"), plan({ expiresAt }), { verb: "decide" }, NOW)).toEqual({ code: "plan_expired", expiresAt });
  });
});

describe("read", () => {
  const anyone: ReadRights = { readers: undefined, admins: [] };
  const narrowed: ReadRights = { readers: ["U0READER", "S0AUDITORS"], admins: ["U0ADMIN", "S0OPS"] };
  const read = (rights: ReadRights): Act => ({ verb: "read", rights });
  it.each<[name: string, who: ReturnType<typeof person>, facts: PlanFacts, rights: ReadRights, expected: RefusalCode | undefined]>([
    ["readers absent: anyone signed in", person("U0MALLORY"), plan(), anyone, undefined],
    ["readers absent, admins set: still anyone", person("U0MALLORY"), plan(), { readers: undefined, admins: ["U0ADMIN"] }, undefined],
    ["readers empty: nobody beyond approvers and admins", person("U0MALLORY"), plan(), { readers: [], admins: [] }, "not_a_reader"],
    ["a listed reader", person("U0READER"), plan(), narrowed, undefined],
    ["a member of a reader group", person("U0AUDREY", ["S0AUDITORS"]), plan(), narrowed, undefined],
    ["a member of some other group", person("U0AUDREY", ["S0ELSE"]), plan(), narrowed, "not_a_reader"],
    ["an admin by id", person("U0ADMIN"), plan(), narrowed, undefined],
    ["an admin through a group", person("U0OLIVER", ["S0OPS"]), plan(), narrowed, undefined],
    ["an approver by id, not a reader", person("U0ALICE"), plan(), narrowed, undefined],
    ["an approver through a group", person("U0GINA", ["S0REVIEWERS"]), plan(), narrowed, undefined],
    ["an approver of a plan long decided", person("U0ALICE"), plan({ status: "applied" }), narrowed, undefined],
    ["an approver of an expired plan", person("U0BOB"), plan({ status: "expired", expiresAt: new Date(0) }), narrowed, undefined],
    ["an approver who already approved", person("U0ALICE"), plan({ approvals: ["U0ALICE"] }), narrowed, undefined],
    ["the requester is not thereby a reader", person("U0RITA"), plan(), narrowed, "not_a_reader"],
    ["the requester who is also an approver", person("U0RITA"), plan({ policy: { approvers: ["U0RITA"], requiredApprovals: 1 } }), narrowed, undefined],
    ["an outsider", person("U0MALLORY"), plan(), narrowed, "not_a_reader"],
  ])("%s → %s", (_name, who, facts, rights, expected) => {
    expect(code(who, facts, read(rights))).toBe(expected);
  });
});

describe("revoke", () => {
  const revoke: Act = { verb: "revoke", admins: ["U0ADMIN", "S0OPS"] };
  const approved = (overrides: Partial<PlanFacts> = {}) => plan({ status: "approved", approvals: ["U0ALICE", "U0BOB"], ...overrides });
  it.each<[name: string, who: ReturnType<typeof person>, facts: PlanFacts, expected: RefusalCode | undefined]>([
    ["an approver who approved it", person("U0ALICE"), approved(), undefined],
    ["an approver through a group, who did not vote", person("U0GINA", ["S0REVIEWERS"]), approved(), undefined],
    ["an admin by id", person("U0ADMIN"), approved(), undefined],
    ["an admin through a group", person("U0OLIVER", ["S0OPS"]), approved(), undefined],
    ["an admin who is also the requester", person("U0RITA", ["S0OPS"]), approved(), undefined],
    [
      "the requester, even when listed as an approver",
      person("U0RITA"),
      approved({ policy: { approvers: ["U0RITA", "U0ALICE"], requiredApprovals: 1 } }),
      "not_a_revoker",
    ],
    ["an outsider", person("U0MALLORY"), approved(), "not_a_revoker"],
    ["a pending plan, even for an approver", person("U0ALICE"), plan(), "not_revocable"],
    ["a claimed plan", person("U0ADMIN"), approved({ status: "executing" }), "not_revocable"],
    ["a final plan", person("U0ADMIN"), approved({ status: "applied" }), "not_revocable"],
    ["a plan already revoked", person("U0ALICE"), approved({ status: "revoked" }), "not_revocable"],
    // The status is the first question, so an outsider learns only what the page already shows them.
    ["an outsider, on a claimed plan", person("U0MALLORY"), approved({ status: "executing" }), "not_revocable"],
  ])("%s → %s", (_name, who, facts, expected) => {
    expect(code(who, facts, revoke)).toBe(expected);
  });

  it("a refusal names the status or who may", () => {
    expect(whyMayNot(person("U0ALICE"), approved({ status: "executing" }), revoke, NOW)).toEqual({ code: "not_revocable", status: "executing" });
    expect(whyMayNot(person("U0MALLORY"), approved(), revoke, NOW)).toEqual({ code: "not_a_revoker", approvers: ["U0ALICE", "U0BOB", "S0REVIEWERS"] });
  });
});

describe("user groups", () => {
  it("S… ids are user groups; U… and W… are people", () => {
    expect(["S0614TZR7", "U024BE7LH", "W0ENTERPRISE"].map(isUserGroup)).toEqual([true, false, false]);
    expect(userGroupsIn(["U0A", "S0B", "W0C", "S0D"])).toEqual(["S0B", "S0D"]);
    expect(approverGroups({ approvers: ["U0ALICE", "S0REVIEWERS"] })).toEqual(["S0REVIEWERS"]);
    expect(approverGroups({ approvers: ["U0A", "W0B"] })).toEqual([]);
  });

  it("a list names a person by id or through a group in it, never through a user id in memberOf", () => {
    expect(names(["U0A", "S0G"], person("U0A"))).toBe(true);
    expect(names(["U0A", "S0G"], person("U0B", ["S0G"]))).toBe(true);
    expect(names(["U0A", "S0G"], person("U0B", ["S0H"]))).toBe(false);
    expect(names(["U0A"], person("U0B", ["U0A"]))).toBe(false);
    expect(names([], person("U0A"))).toBe(false);
  });
});
