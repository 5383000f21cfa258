/** Reviewers editing a pending plan's values before approving it: the form a door shows, and the edit, which makes a new version. What a door may call lives here; the files beside it are this capability's own. */
export { editPlan } from "./edit-plan.ts";
export type { EditPlanInput, EditPlanResult } from "./edit-plan.ts";
export { editForm } from "./editable-plan.ts";
export type { EditField, EditForm } from "./editable-plan.ts";
