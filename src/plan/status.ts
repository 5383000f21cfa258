// Kept free of imports: drizzle-kit loads the store schema (which needs this) through CommonJS.
export const PLAN_STATUSES = [
  "pending",
  "approved",
  "rejected",
  "expired",
  "cancelled",
  "executing",
  "applied",
  "failed",
  "stale",
  // Final too: a newer version replaced it (re-plan), or its approval was withdrawn (revoke).
  "superseded",
  "revoked",
] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
