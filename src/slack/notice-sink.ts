import type { WebClient } from "@slack/web-api";
import type { ServiceContext } from "../service/context.ts";
import type { OutboxHandler } from "../service/delivery/index.ts";
import type { PauseNotice } from "../service/operations/index.ts";
import type { ExecutorsMissingNotice } from "../service/execution/index.ts";
import { bookChannelSlot } from "../service/delivery/index.ts";
import { inlineCode, mention, mrkdwnText, slackDate } from "./escape.ts";
import { deliveryErrorOf } from "./slack-errors.ts";

/** Slack allows about one message per second per channel (the same spacing every post here keeps). */
const CHANNEL_SPACING_MS = 1000;
const MAX_SLOT_WAIT_MS = 10_000;
const MAX_REASON_CHARS = 2000;

/** What the review channels are told, once each, about Countersign as a whole. */
export type Notice = PauseNotice | ExecutorsMissingNotice;

/** What a review channel is told when Countersign pauses or resumes, or when no executor is connected. */
export function noticeText(notice: Notice): string {
  if (notice.type === "executors.missing") {
    const seen = notice.lastSeenAt ? `none has asked for work since ${slackDate(notice.lastSeenAt)}` : "none has asked for work yet";
    return (
      `:warning: *No executor is connected*: ${seen} (\`executor.missingAfterSeconds\`: ${notice.missingAfterSeconds}).\n` +
      "Approved plans are not applied until one is: start `countersign executor` with the server's `COUNTERSIGN_EXECUTOR_TOKEN` and grant public key. Each waiting plan's thread says so; their grants keep running out."
    );
  }
  const who = notice.via === "web" ? mention(notice.by) : `${inlineCode(notice.by, 100)} (CLI)`;
  if (notice.type === "countersign.paused") {
    return (
      `:double_vertical_bar: *Countersign is paused* by ${who}: ${mrkdwnText(notice.reason ?? "", MAX_REASON_CHARS)}\n` +
      "No executor takes a plan until it resumes. Plans can still be submitted and decided; approved ones wait (their grants keep running out), and plans already executing finish."
    );
  }
  return `:arrow_forward: *Countersign resumed* by ${who}. Approved plans whose grants are still valid are applied again.`;
}

/**
 * The "slack_notice" outbox sink: posts a pause or resume announcement, or that no executor is
 * connected, to one review channel. Each announcement is one outbox row per channel, written with
 * the change it announces, so it is posted once however many replicas run.
 */
export function noticeSink(ctx: ServiceContext, client: WebClient): OutboxHandler {
  return async (payload) => {
    const notice = payload as unknown as Notice;
    const wait = Math.min(await bookChannelSlot(ctx, notice.channel, CHANNEL_SPACING_MS), MAX_SLOT_WAIT_MS);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    try {
      await client.chat.postMessage({ channel: notice.channel, text: noticeText(notice), unfurl_links: false, unfurl_media: false });
    } catch (err) {
      throw deliveryErrorOf(err, `announcing ${notice.type}`);
    }
  };
}
