/** The state machine: every transition, the locked writes of a decision, and the plan as viewed. What a door may call lives here; the files beside it are this capability's own. */
export type { PlanView } from "./plan-view.ts";
