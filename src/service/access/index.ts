/** Who may read and act on a plan: approver groups, the delegations a person holds, read rights, and the refusals doors show. What a door may call lives here; the files beside it are this capability's own. */
export { whyNotRevocable } from "./refusal-error.ts";
export { MAX_STATED_REASON_CHARS } from "./stated-reason.ts";
