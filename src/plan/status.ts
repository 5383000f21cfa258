// Kept free of imports: drizzle-kit loads the store schema (which needs this) through CommonJS.
export const PLAN_STATUSES = [
  "pending", "approved", "rejected", "expired", "cancelled", "executing", "applied", "failed", "stale",
] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
