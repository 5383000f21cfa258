/** An agent's side of a plan: submit (and re-plan), read, wait for, list events of, cancel. What a door may call lives here; the files beside it are this capability's own. */
export { cancelPlan } from "./cancel-plan.ts";
export { getPlan } from "./get-plan.ts";
export { listPlanEvents } from "./list-events.ts";
export { submitPlan } from "./submit-plan.ts";
export { MAX_WAIT_SECONDS, waitForPlan } from "./wait-for-plan.ts";
