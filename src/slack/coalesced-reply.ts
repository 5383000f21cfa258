import type { Block, SlackMessage, ThreadEvent } from "./plan-message.ts";
import { mention, mrkdwn, singleLine, truncate, escapeMrkdwn } from "./escape.ts";
import { BLOCKS_JSON_BUDGET, SLACK_LIMITS, renderThreadReply } from "./render.ts";

/**
 * One thread reply for several transitions of a plan that were still queued together (issue
 * 14: Slack's ~1 message a second per channel is spent on previews, not on one post per row).
 * The notification line lists them in order ("approved by @a → executing → applied"); the blocks
 * are each transition's own reply, in order, so the thread stays a faithful lifecycle. Detail
 * blocks that would not fit Slack's limits are left to the plan page; each transition's own line
 * is always kept.
 */
export function renderCoalescedReply(events: readonly ThreadEvent[]): SlackMessage {
  if (events.length === 1) return renderThreadReply(events[0]!);
  const summary = events.map(stepOf).join(" → ");
  const replies = events.map(renderThreadReply);
  const head: Block = { type: "section", text: mrkdwn(summary, SLACK_LIMITS.sectionText) };
  // Every transition's own line first in the budget, then details while they fit.
  const lines = replies.map((r) => r.blocks.slice(0, 1));
  const details = replies.map((r) => r.blocks.slice(1));
  let size = jsonSize([head, ...lines.flat()]);
  let count = 1 + lines.flat().length;
  let hidden = 0;
  const kept = details.map((blocks) =>
    blocks.filter((block) => {
      const cost = jsonSize(block) + 1;
      if (count + 1 >= SLACK_LIMITS.blocks || size + cost > BLOCKS_JSON_BUDGET - MARKER_ROOM) {
        hidden++;
        return false;
      }
      size += cost;
      count++;
      return true;
    }),
  );
  const blocks: Block[] = [head, ...lines.flatMap((line, i) => [...line, ...kept[i]!])];
  if (hidden > 0) blocks.push({ type: "context", elements: [mrkdwn(`… ${hidden} more detail(s) — see the full plan`, SLACK_LIMITS.contextText)] });
  return { text: truncate(summary, SLACK_LIMITS.messageText), blocks };
}

/** Room kept for the marker that says details were left out. */
const MARKER_ROOM = 200;

function jsonSize(value: unknown): number {
  return JSON.stringify(value).length;
}

/** A transition as one short step of the summary line. */
export function stepOf(e: ThreadEvent): string {
  switch (e.type) {
    case "decision.approve":
      return `approval ${e.approvals} of ${e.requiredApprovals} by ${mention(e.userId)}${e.for ? ` for ${mention(e.for)}` : ""}`;
    case "plan.approved":
      return e.approvers.length > 0
        ? `approved by ${e.approvers.slice(0, 3).map(mention).join(" ")}${e.approvers.length > 3 ? ` and ${e.approvers.length - 3} more` : ""}`
        : "approved";
    case "plan.rejected":
      return `rejected by ${mention(e.userId)}${e.for ? ` for ${mention(e.for)}` : ""}`;
    case "plan.expired":
      return "expired";
    case "plan.cancelled":
      return `cancelled by the agent (${escapeMrkdwn(truncate(singleLine(e.agent), 80))})`;
    case "plan.executing":
      return "executing";
    case "plan.reclaimed":
      return `taken over (claim ${e.claim})`;
    case "plan.reminder":
      return "reminder";
    case "plan.applied":
      // The notification line is all some people read: a write that did not land is in it.
      return e.outcome.actions.some((a) => a.verified === false) ? "applied, not as approved" : "applied";
    case "plan.failed":
      return "failed";
    case "plan.stale":
      return "stale";
    case "plan.revoked":
      return `revoked by ${mention(e.userId)}${e.for ? ` for ${mention(e.for)}` : ""}`;
    case "plan.no_executor":
      return "waiting for an executor";
    case "plan.superseded":
      return e.editedBy ? `edited by ${mention(e.editedBy)}` : "replaced by a new version";
    case "undo.proposed":
      return "undo proposed";
    case "undo.applied":
      return "taken back";
  }
}
