import type { Config } from "../../config/load.ts";
import type { PlanDocument } from "../../plan/schema.ts";

/**
 * Outbox lanes: every outbox row waits in one lane, and lanes drain independently, so
 * a slow or rate-limited sink (a flooded Slack channel, an agent's webhook that times out) never
 * delays another. The lane is fixed when the row is written, from the plan and the config:
 * `slack:<review channel>`, `webhook:<agent name>`, `slack_notice:<channel>` (noticeLaneOf, for
 * announcements), or the sink's kind for any other sink (sinkLane).
 */
export type LaneConfig = Pick<Config, "targets" | "slack">;

/** The outbox sink that posts announcements to the review channels (pause.ts, execution/missing-executors.ts): a lane per channel. */
export const NOTICE_SINK = "slack_notice";

/** The lane of the notices to one channel. */
export function noticeLaneOf(channel: string): string {
  return `${NOTICE_SINK}:${channel}`;
}

/** The sinks whose rows wait in a lane per channel or per agent, and what the lane is per. */
const LANE_PER: Readonly<Record<string, string>> = { slack: "channel", webhook: "agent", [NOTICE_SINK]: "channel" };

/** The review channel of a plan: its first action's target's own, or Slack's default. The one rule for the lane and the post. */
export function reviewChannelOf(config: LaneConfig, doc: Pick<PlanDocument, "actions">): string | undefined {
  const target = doc.actions[0]?.target;
  const own = target === undefined ? undefined : config.targets[target]?.policy?.reviewChannel;
  return own ?? (config.slack.enabled ? config.slack.reviewChannel : undefined);
}

/** The lane of a plan's rows for one sink. */
export function laneOf(config: LaneConfig, kind: string, doc: Pick<PlanDocument, "actions" | "agent">): string {
  if (kind === "slack") {
    const channel = reviewChannelOf(config, doc);
    return channel ? `slack:${channel}` : "slack";
  }
  if (kind === "webhook") return `webhook:${doc.agent}`;
  return sinkLane(kind).lane;
}

/**
 * The one lane of a sink whose rows are not split by channel or agent (App Home, seals), and the
 * priority every row of it has: a statement that looks for its rows by both reads them in id
 * order from `outbox_lane_order`, whatever the table's statistics say.
 */
export function sinkLane(kind: string): { lane: string; priority: number } {
  const per = LANE_PER[kind];
  if (per !== undefined) throw new Error(`the ${kind} sink has a lane per ${per}, not one`);
  return { lane: kind, priority: priorityOf(kind, "") };
}

/** Whether a lane holds rows of this sink (lanes are the kind, or the kind and a colon). */
export function laneIsOf(lane: string, kind: string): boolean {
  return lane === kind || lane.startsWith(`${kind}:`);
}

/**
 * Order within a lane: a Slack preview (a plan's first post) goes before older plans' thread
 * replies, because a reviewer cannot approve what they never saw; it is each plan's first row,
 * so a plan's own order still holds. Webhooks keep the order events happened in.
 */
export function priorityOf(kind: string, eventType: string): number {
  return kind === "slack" && eventType === "plan.submitted" ? 0 : 1;
}

/**
 * Events delivered on their own, never coalesced with a plan's other queued events: the preview
 * (every reply goes under it) and reminders, which exist to reach people: their notification line
 * is the mentions, not a step in a summary. Everything else is a step of the plan's lifecycle.
 */
export const DELIVERED_ALONE: readonly string[] = ["plan.submitted", "plan.reminder"];
