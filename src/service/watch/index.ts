/** The loops that move plans on their own: target re-reads, expiry, reminders. What a door may call lives here; the files beside it are this capability's own. */
export { expireDue } from "./expire-due.ts";
export { remindDue } from "./remind-due.ts";
export { watchTargets } from "./watch-targets.ts";
