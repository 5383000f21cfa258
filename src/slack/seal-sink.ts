import type { WebClient } from "@slack/web-api";
import type { ServiceContext } from "../service/context.ts";
import type { OutboxHandler } from "../service/delivery/index.ts";
import type { PublishedSeal } from "../service/audit/index.ts";
import { bookChannelSlot } from "../service/delivery/index.ts";
import { deliveryErrorOf } from "./slack-errors.ts";

const CHANNEL_SPACING_MS = 1000;
const MAX_SLOT_WAIT_MS = 10_000;

/** What slack.auditChannel is told per signed seal: enough to check it against the seals file or the database later. */
export function sealText(seal: PublishedSeal): string {
  return (
    `:lock: Audit seal *${seal.seq}* (${seal.eventsTotal} events, sealed ${seal.sealedAt})\n` +
    `hash \`${seal.hash}\`\nsignature \`${seal.signature}\` (key \`${seal.kid}\`)`
  );
}

/** The "audit_seal.slack" sink: one short message per signed seal in the audit channel. */
export function sealSlackSink(ctx: ServiceContext, client: WebClient, channel: string): OutboxHandler {
  return async (payload) => {
    const seal = payload as unknown as PublishedSeal;
    const wait = Math.min(await bookChannelSlot(ctx, channel, CHANNEL_SPACING_MS), MAX_SLOT_WAIT_MS);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    try {
      await client.chat.postMessage({ channel, text: sealText(seal), unfurl_links: false, unfurl_media: false });
    } catch (err) {
      throw deliveryErrorOf(err, `publishing audit seal ${seal.seq}`);
    }
  };
}
