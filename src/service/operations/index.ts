/** Running Countersign: the kill switch, metrics and retention. What a door may call lives here; the files beside it are this capability's own. */
export { countIfRefusal, countRefusal, readMetrics, rollUpMetrics } from "./metrics.ts";
export type { HistogramSnapshot, MetricsSnapshot } from "./metrics.ts";
export { PauseWatch } from "./pause-watch.ts";
export { isAdmin, pauseCountersign, pauseNow, readPause, resumeCountersign } from "./pause.ts";
export type { PauseNotice } from "./pause.ts";
export { DEFAULT_RETENTION, sweepRetention } from "./retention.ts";
