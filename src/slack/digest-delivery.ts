import type { WebClient } from "@slack/web-api";
import type { ServiceContext } from "../service/context.ts";
import { digestAt, digestLinesOf, nextPostInMs, recordDigest, waitingPreviews } from "../service/review/index.ts";
import { DIGEST_MAX_LINES, digestCapacity, previewsToDigest, renderDigest } from "./digest.ts";

/** How many queued previews are read to judge a channel's delay: far more than one digest holds. */
const WAITING_READ = 500;

/** What the Slack sink lends the digest: its client, its channel pacing and its error mapping. */
export interface DigestPoster {
  client: WebClient;
  /** `slack.digest.afterSeconds` in ms; 0: never digest. */
  afterMs: number;
  /** Ms between two posts in a channel. */
  spacingMs: number;
  takeSlot(channel: string): Promise<void>;
  call<T>(what: string, send: () => Promise<T>): Promise<T>;
}

/**
 * Called as a preview (outbox row `headRowId`, plan `headPlanId`) is about to be posted in
 * `channel`: when the channel's queue would show waiting previews later than `afterMs` after
 * their submission, posts one digest listing the waiting plans that are not high-risk (as many
 * as one message holds; the rest get the next digest) and records it, which delivers their
 * queued preview rows. True when the head plan itself is in the digest (its preview is then not
 * posted); a high-risk head is still posted by the caller, after the digest.
 */
export async function digestWaiting(
  ctx: ServiceContext,
  poster: DigestPoster,
  input: { channel: string; headRowId: number; headPlanId: string },
): Promise<boolean> {
  if (poster.afterMs <= 0) return false;
  const waiting = await waitingPreviews(ctx, { headRowId: input.headRowId, limit: WAITING_READ });
  if (waiting.length < 2) return false;
  const chosen = previewsToDigest({
    now: ctx.clock().getTime(),
    nextPostInMs: await nextPostInMs(ctx, input.channel),
    spacingMs: poster.spacingMs,
    afterMs: poster.afterMs,
    waiting,
  });
  if (chosen.length === 0) return false;
  const candidates = await digestLinesOf(ctx, chosen.slice(0, DIGEST_MAX_LINES));
  const lines = candidates.slice(0, digestCapacity(candidates));
  if (lines.length < 2) return false;
  await poster.takeSlot(input.channel);
  const answer = await poster.call(`posting a digest of ${lines.length} plans`, () =>
    poster.client.chat.postMessage({ channel: input.channel, ...renderDigest(lines), unfurl_links: false, unfurl_media: false }),
  );
  await recordDigest(ctx, { channel: input.channel, ts: answer.ts as string, planIds: lines.map((l) => l.planId) });
  return lines.some((l) => l.planId === input.headPlanId);
}

/** Re-renders a digest from its plans as they are now (after one of them changed). */
export async function updateDigest(
  ctx: ServiceContext,
  poster: Pick<DigestPoster, "client" | "call">,
  message: { channel: string; ts: string },
  what: string,
): Promise<void> {
  const lines = await digestAt(ctx, message);
  if (lines.length === 0) return;
  await poster.call(`updating the digest (${what})`, () => poster.client.chat.update({ channel: message.channel, ts: message.ts, ...renderDigest(lines) }));
}
