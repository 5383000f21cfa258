import { describe, expect, it } from "vitest";
import { canTransition, isOpen, OPEN_STATUSES, TRANSITIONS, type Transition } from "../../../src/plan/lifecycle.ts";
import { PLAN_STATUSES, type PlanStatus } from "../../../src/plan/status.ts";

/**
 * The lifecycle as DESIGN.md draws it:
 *
 *   pending ──approve (quorum met)──▶ approved ──claim──▶ executing ──▶ applied | failed | stale
 *      │                                  │
 *      ├──reject──▶ rejected              └──grant expires before claim──▶ expired
 *      ├──ttl passes──▶ expired
 *      └──agent cancels──▶ cancelled
 *
 * plus two edges the diagram does not draw: `claim` from `executing` (an executor re-claims a plan
 * whose lease ran out; the status stays `executing`), and `executing → expired` when that
 * takeover finds the grant expired and the change not applied; and three later edges: `drift`
 * (pending or approved → stale, a watched target moved), `supersede` (pending or approved →
 * superseded, a new version replaced it) and `revoke` (approved → revoked). Nothing else is allowed.
 */
const ALLOWED: Record<Transition, { from: PlanStatus[]; to: PlanStatus }> = {
  approve: { from: ["pending"], to: "approved" },
  reject: { from: ["pending"], to: "rejected" },
  expire: { from: ["pending"], to: "expired" },
  cancel: { from: ["pending"], to: "cancelled" },
  claim: { from: ["approved", "executing"], to: "executing" },
  expireGrant: { from: ["approved"], to: "expired" },
  apply: { from: ["executing"], to: "applied" },
  fail: { from: ["executing"], to: "failed" },
  stale: { from: ["executing"], to: "stale" },
  expireUnapplied: { from: ["executing"], to: "expired" },
  drift: { from: ["pending", "approved"], to: "stale" },
  supersede: { from: ["pending", "approved"], to: "superseded" },
  revoke: { from: ["approved"], to: "revoked" },
};

const TRANSITION_NAMES = Object.keys(ALLOWED) as Transition[];
const TERMINAL: PlanStatus[] = ["rejected", "expired", "cancelled", "applied", "failed", "stale", "superseded", "revoked"];

const EVERY_PAIR = PLAN_STATUSES.flatMap((status) =>
  TRANSITION_NAMES.map((transition) => [status, transition, ALLOWED[transition].from.includes(status)] as const),
);

describe("lifecycle", () => {
  it("knows exactly the transitions of the design", () => {
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...TRANSITION_NAMES].sort());
  });

  it("has eleven statuses", () => {
    expect([...PLAN_STATUSES].sort()).toEqual(
      ["applied", "approved", "cancelled", "executing", "expired", "failed", "pending", "rejected", "revoked", "stale", "superseded"],
    );
  });

  it(`covers every (status, transition) pair: ${PLAN_STATUSES.length} × ${TRANSITION_NAMES.length}`, () => {
    expect(EVERY_PAIR).toHaveLength(11 * 13);
  });

  it.each(EVERY_PAIR)("canTransition(%s, %s) is %s", (status, transition, allowed) => {
    expect(canTransition(status, transition)).toBe(allowed);
  });

  it.each(TRANSITION_NAMES)("%s leads to the status the design names", (transition) => {
    expect(TRANSITIONS[transition].to).toBe(ALLOWED[transition].to);
    expect([...TRANSITIONS[transition].from].sort()).toEqual([...ALLOWED[transition].from].sort());
  });

  it.each(TERMINAL)("%s is terminal: no transition leaves it", (status) => {
    for (const transition of TRANSITION_NAMES) expect(canTransition(status, transition)).toBe(false);
  });

  it("no transition leads back to pending", () => {
    for (const transition of TRANSITION_NAMES) expect(TRANSITIONS[transition].to).not.toBe("pending");
  });

  it("applied and failed are reached only from executing; stale also by drift before any claim", () => {
    for (const transition of TRANSITION_NAMES) {
      const { from, to } = TRANSITIONS[transition];
      if (to === "applied" || to === "failed") expect(from).toEqual(["executing"]);
      if (to === "stale") expect([...from].sort()).toEqual(transition === "drift" ? ["approved", "pending"] : ["executing"]);
    }
  });
});

describe("isOpen", () => {
  it.each<[PlanStatus, boolean]>([
    ["pending", true],
    ["approved", true],
    ["executing", true],
    ["rejected", false],
    ["expired", false],
    ["cancelled", false],
    ["applied", false],
    ["failed", false],
    ["stale", false],
  ])("isOpen(%s) is %s", (status, open) => {
    expect(isOpen(status)).toBe(open);
  });

  it("a status is open exactly when some transition can leave it", () => {
    for (const status of PLAN_STATUSES) {
      expect(isOpen(status)).toBe(TRANSITION_NAMES.some((t) => canTransition(status, t)));
    }
    expect([...OPEN_STATUSES].sort()).toEqual(["approved", "executing", "pending"]);
  });
});
