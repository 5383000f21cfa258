/** People deciding on plans: approve, reject and revoke, each through the one decision rule. What a door may call lives here; the files beside it are this capability's own. */
export { decide } from "./decide.ts";
export type { DecideInput, DecideResult } from "./decide.ts";
export { revokePlan } from "./revoke-plan.ts";
