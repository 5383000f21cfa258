/** The outbox's far side: the sink contract, the drain, lane health and dead deliveries. What a door may call lives here; the files beside it are this capability's own. */
export type { LaneHealth } from "./lane-health.ts";
export { maySeeLanes, outboxVisibility } from "./outbox-visibility.ts";
export type { DeadDelivery, OutboxVisibility } from "./outbox-visibility.ts";
export { startOutboxWorker } from "./outbox-worker.ts";
export { retryDelivery } from "./retry-delivery.ts";
export { DEFAULT_DELIVERY, DeliveryError } from "./sink-contract.ts";
export type { DeliveryPolicy, OutboxHandler } from "./sink-contract.ts";
export { bookChannelSlot, postedPreviewOf, recordPostedPreview, slackViewOf, threadOf } from "./slack-messages.ts";
export { webhookOfPlan } from "./webhook-of-plan.ts";
