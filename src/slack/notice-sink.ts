import type { WebClient } from "@slack/web-api";
import type { ServiceContext } from "../service/context.ts";
import type { OutboxHandler } from "../service/delivery/index.ts";
import type { PauseNotice } from "../service/operations/index.ts";
import { bookChannelSlot } from "../service/delivery/index.ts";
import { inlineCode, mention, mrkdwnText } from "./escape.ts";
import { deliveryErrorOf } from "./slack-errors.ts";

/** Slack allows about one message per second per channel (the same spacing every post here keeps). */
const CHANNEL_SPACING_MS = 1000;
const MAX_SLOT_WAIT_MS = 10_000;
const MAX_REASON_CHARS = 2000;

/** What a review channel is told when Countersign pauses or resumes. */
export function noticeText(notice: PauseNotice): string {
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
 * The "slack_notice" outbox sink: posts a pause or resume announcement to one review channel.
 * Each announcement is one outbox row per channel, written with the pause, so it is posted once
 * however many replicas run.
 */
export function noticeSink(ctx: ServiceContext, client: WebClient): OutboxHandler {
  return async (payload) => {
    const notice = payload as unknown as PauseNotice;
    const wait = Math.min(await bookChannelSlot(ctx, notice.channel, CHANNEL_SPACING_MS), MAX_SLOT_WAIT_MS);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    try {
      await client.chat.postMessage({ channel: notice.channel, text: noticeText(notice), unfurl_links: false, unfurl_media: false });
    } catch (err) {
      throw deliveryErrorOf(err, `announcing ${notice.type}`);
    }
  };
}
