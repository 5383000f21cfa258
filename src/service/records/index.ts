/** What every change writes in its own transaction: the audit event, the outbox rows, the NOTIFY. What a door may call lives here; the files beside it are this capability's own. */
export { HOME_SINK } from "./home-events.ts";
export { NOTICE_SINK, reviewChannelOf } from "./outbox-lanes.ts";
export type { PlanEvent } from "./outbox.ts";
export { ListeningPlanSignals } from "./plan-signals.ts";
