import { describe, expect, it } from "vitest";
import { isOpen, OPEN_STATUSES, TRANSITIONS, type Transition } from "../../../src/plan/lifecycle.ts";
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
 * plus edges the diagram does not draw: `claim` from `executing` (a re-claim after a lease runs
 * out), `executing → expired` (that takeover finds the grant expired), `drift` and `supersede`
 * (pending or approved → stale / superseded) and `revoke` (approved → revoked).
 */
const TRANSITION_NAMES = Object.keys(TRANSITIONS) as Transition[];
const TERMINAL: PlanStatus[] = ["rejected", "expired", "cancelled", "applied", "failed", "stale", "superseded", "revoked"];
/** The statuses some transition's conditional UPDATE accepts: those a plan can still leave. */
const LEFT_BY_SOME_TRANSITION = new Set<PlanStatus>(Object.values(TRANSITIONS).flatMap((t) => t.from));

describe("lifecycle", () => {
  it("has eleven statuses", () => {
    expect([...PLAN_STATUSES].sort()).toEqual([
      "applied",
      "approved",
      "cancelled",
      "executing",
      "expired",
      "failed",
      "pending",
      "rejected",
      "revoked",
      "stale",
      "superseded",
    ]);
  });

  it.each(TERMINAL)("%s is terminal: no transition leaves it", (status) => {
    expect(LEFT_BY_SOME_TRANSITION.has(status)).toBe(false);
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
      expect(isOpen(status)).toBe(LEFT_BY_SOME_TRANSITION.has(status));
    }
    expect([...OPEN_STATUSES].sort()).toEqual(["approved", "executing", "pending"]);
  });
});
