/** The outbox sink that republishes the App Home of the people a plan event concerns. */
export const HOME_SINK = "slack_home";

/**
 * The events that can change what a Home shows, the pending plans waiting for someone and their
 * approvals: a plan arrives, gains an approval, or stops waiting, decided or not (a drifted target
 * makes it stale, a new version supersedes it). Only these are queued for the Home sink: the rest of
 * a plan's life (executing, applied, reminders…) concerns plans no Home lists, and each of their
 * rows was taken, read and marked delivered for nothing.
 */
export const HOME_EVENTS: ReadonlySet<string> = new Set([
  "plan.submitted",
  "decision.approve",
  "plan.approved",
  "plan.rejected",
  "plan.expired",
  "plan.cancelled",
  "plan.stale",
  "plan.superseded",
]);
