/** Taking an applied plan back: a person or the plan's agent asks, and a new plan that restores what it changed goes to review. What a door may call lives here. */
export { proposeUndo, UNDO_PROPOSED_EVENT } from "./propose-undo.ts";
export { UNDO_APPLIED_EVENT } from "./mark-undone.ts";
