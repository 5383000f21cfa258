import type { PlanStatus } from "./schema.ts";

/**
 * Every transition a plan may make, and from where. The store turns each into one conditional
 * UPDATE (`WHERE status IN (from)`), so concurrent clicks, replicas and sweepers cannot apply
 * the same transition twice.
 */
export const TRANSITIONS = {
  approve: { from: ["pending"], to: "approved" },
  reject: { from: ["pending"], to: "rejected" },
  expire: { from: ["pending"], to: "expired" },
  cancel: { from: ["pending"], to: "cancelled" },
  claim: { from: ["approved", "executing"], to: "executing" },
  expireGrant: { from: ["approved"], to: "expired" },
  apply: { from: ["executing"], to: "applied" },
  fail: { from: ["executing"], to: "failed" },
  stale: { from: ["executing"], to: "stale" },
  /** The grant ran out while a takeover found the change not applied: nothing may be written now. */
  expireUnapplied: { from: ["executing"], to: "expired" },
  /** A watched target moved past the plan's precondition before anyone claimed it. */
  drift: { from: ["pending", "approved"], to: "stale" },
  /** The agent submitted a new version naming this one in `supersedes`; approvals never carry over. */
  supersede: { from: ["pending", "approved"], to: "superseded" },
  /** Someone who may decide it (or an admin) withdrew an approval no executor has claimed. */
  revoke: { from: ["approved"], to: "revoked" },
} as const satisfies Record<string, { from: readonly PlanStatus[]; to: PlanStatus }>;

export type Transition = keyof typeof TRANSITIONS;

/** Statuses a plan can still leave; a waiting agent keeps waiting while the plan is in one. */
export const OPEN_STATUSES: readonly PlanStatus[] = ["pending", "approved", "executing"];

export function isOpen(status: PlanStatus): boolean {
  return OPEN_STATUSES.includes(status);
}

/**
 * A pending plan whose time has run out is expired, whether or not the sweeper has got to it
 * yet: every verb that acts on a pending plan asks this, never `status` alone.
 */
export function hasExpired(plan: { status: PlanStatus; expiresAt: Date }, now: Date): boolean {
  return plan.status === "expired" || (plan.status === "pending" && now.getTime() >= plan.expiresAt.getTime());
}
