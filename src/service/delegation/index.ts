/** People deciding in another's place while they are away: make, list and end a delegation, and who a person may act for. What a door may call lives here; the files beside it are this capability's own. */
export { createDelegation, MAX_OPEN_DELEGATIONS } from "./create-delegation.ts";
export type { CreateDelegationInput, DelegationAuthor } from "./create-delegation.ts";
export { endDelegation } from "./end-delegation.ts";
export { listDelegations } from "./list-delegations.ts";
export type { DelegationView } from "./delegation-view.ts";
