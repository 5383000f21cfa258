// Kept free of imports: drizzle-kit loads the store schema (which needs this) through CommonJS.
export const PLAN_STATUSES = [
  "pending", "approved", "rejected", "expired", "cancelled", "executing", "applied", "failed", "stale",
  // Issue 15 (re-plan) and issue 16 (revoke): final statuses.
  "superseded", "revoked",
] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
