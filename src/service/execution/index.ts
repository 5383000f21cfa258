/** Executors: claiming approved plans, keeping the lease, reporting outcomes, and telling when none is connected. What a door may call lives here; the files beside it are this capability's own. */
export { claimApprovedWaiting } from "./claim-approved.ts";
export { grantKeys } from "./grant-keys.ts";
export { heartbeatClaim, leaseLost } from "./heartbeat-claim.ts";
export { reportOutcome } from "./report-outcome.ts";
export { NO_EXECUTOR_EVENT, watchExecutors } from "./missing-executors.ts";
export type { ExecutorsMissingNotice } from "./missing-executors.ts";
