/** What reviewers read: a plan's review, lists, version diffs, the App Home and digests. What a door may call lives here; the files beside it are this capability's own. */
export { digestAt, digestLinesOf, nextPostInMs, recordDigest, waitingPreviews } from "./digest.ts";
export type { DigestLine, WaitingPreview } from "./digest.ts";
export { coveredLater, decidersOfPlans, homeTabFor } from "./home-tab.ts";
export { plansWaitingFor } from "./plans-for-person.ts";
export type { WaitingPlan } from "./plans-for-person.ts";
export { listForBrowser, parsePendingCursor, parseStatusFilter, pendingCursorText, reviewPlan } from "./review-plan.ts";
export type { BrowserList, DecisionRefusal, PlanForReader, ReviewedPlan } from "./review-plan.ts";
export { changedSinceOf } from "./version-diff.ts";
