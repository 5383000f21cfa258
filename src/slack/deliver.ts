import { WebClient } from "@slack/web-api";
import type { Outcome } from "../plan/outcome.ts";
import type { PlanDocument } from "../plan/schema.ts";
import type { ServiceContext } from "../service/context.ts";
import { DeliveryError, type OutboxHandler } from "../service/delivery/index.ts";
import { type PlanEvent } from "../service/records/index.ts";
import type { PlanView } from "../service/lifecycle/index.ts";
import { bookChannelSlot, postedPreviewOf, recordPostedPreview, slackViewOf, threadOf } from "../service/delivery/index.ts";
import { changedSinceOf } from "../service/review/index.ts";
import { NO_EXECUTOR_EVENT } from "../service/execution/index.ts";
import { UNDO_APPLIED_EVENT, UNDO_PROPOSED_EVENT } from "../service/undo/index.ts";
import type { PlanDiff } from "../policy/plan-diff.ts";
import type { PlanMessage, SlackMessage, ThreadEvent } from "./plan-message.ts";
import { escapeMrkdwn, mention, slackDate } from "./escape.ts";
import { renderPlanMessage } from "./render.ts";
import { renderCoalescedReply } from "./coalesced-reply.ts";
import { deliveryErrorOf } from "./slack-errors.ts";
import { digestWaiting, updateDigest, type DigestPoster } from "./digest-delivery.ts";
import { renderDigestReply } from "./digest.ts";

/** Slack allows about one message per second per channel. */
const CHANNEL_SPACING_MS = 1000;
/** Booked slots run ahead by at most a few seconds (one per busy worker); anything longer is a clock jump. */
const MAX_SLOT_WAIT_MS = 10_000;

export interface SlackDelivery {
  client: WebClient;
  /** Where untouched high-risk plans are escalated, if anywhere. */
  escalationChannel?: string | undefined;
  /** The review channel of a plan (a target's own, or the default). */
  channelOf(doc: PlanDocument): string;
  /** `slack.digest.afterSeconds`: a channel's queue later than this posts a digest instead of previews (digest.ts); 0: never. */
  digestAfterSeconds?: number;
}

/** The outbox's WebClient: no retries of its own and 429s surfaced, because the outbox owns retrying. */
export function deliveryClient(token: string, apiUrl: string | undefined): WebClient {
  return new WebClient(token, { ...(apiUrl ? { slackApiUrl: apiUrl } : {}), retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
}

/**
 * The "slack" outbox sink: posts the preview when a plan is submitted, then for every later
 * event a reply in its thread and an update of the preview, in order per plan. Several of a
 * plan's transitions queued together (its lane was busy) are one reply listing them in order and
 * one update (`many`): the preview always shows the plan as it is now.
 */
export function slackSink(ctx: ServiceContext, slack: SlackDelivery): OutboxHandler {
  const digests: DigestPoster = {
    client: slack.client,
    afterMs: (slack.digestAfterSeconds ?? 0) * 1000,
    spacingMs: CHANNEL_SPACING_MS,
    takeSlot: (channel) => takeChannelSlot(ctx, channel),
    call,
  };
  const deliverAll = async (events: readonly PlanEvent[], rows: readonly { id: number }[]): Promise<void> => {
    const planId = events[0]!.planId;
    const view = await slackViewOf(ctx, planId);
    if (!view) throw new DeliveryError(`plan ${planId} is gone`, { permanent: true });
    const posted = await postedPreviewOf(ctx, planId);

    if (events[0]!.type === "plan.submitted") {
      if (events.length > 1) throw new Error("a preview is delivered on its own, never coalesced with later events");
      if (posted) return; // redelivered after a crash between posting and recording: post once
      const changedSince = await changedSinceOf(ctx, view);
      // A re-plan continues its first version's conversation: its preview, buttons and all, is a
      // reply in that thread, broadcast to the channel so it is seen as the new preview it is.
      const earlier = view.supersedes && (await postedPreviewOf(ctx, view.supersedes.id));
      if (earlier) {
        const message = renderPlanMessage(planMessageOf(view, changedSince));
        await takeChannelSlot(ctx, earlier.channel);
        const answer = await call("posting the new version in its thread", () =>
          slack.client.chat.postMessage({
            channel: earlier.channel,
            thread_ts: threadOf(earlier),
            reply_broadcast: true,
            ...message,
            unfurl_links: false,
            unfurl_media: false,
          }),
        );
        await recordPostedPreview(ctx, planId, { channel: earlier.channel, ts: answer.ts as string, threadTs: threadOf(earlier) });
        return;
      }
      const channel = slack.channelOf(view.plan);
      // Too many previews queued in this channel: the waiting ones may go out as one digest.
      if (await digestWaiting(ctx, digests, { channel, headRowId: rows[0]!.id, headPlanId: planId })) return;
      const message = renderPlanMessage(planMessageOf(view, changedSince));
      await takeChannelSlot(ctx, channel);
      const answer = await call("posting the preview", () => slack.client.chat.postMessage({ channel, ...message, unfurl_links: false, unfurl_media: false }));
      await recordPostedPreview(ctx, planId, { channel, ts: answer.ts as string });
      return;
    }

    if (!posted) throw new DeliveryError(`plan ${planId} has no preview message in Slack to reply under (its post failed)`, { permanent: true });
    const replies = events.map((event) => threadEventOf(event, view)).filter((r) => r !== undefined);
    const what = events.map((e) => e.type).join(", ");
    // A digest's thread holds many plans' lifecycles: each reply names its plan.
    const inThread = (reply: SlackMessage) =>
      posted.digest ? renderDigestReply({ title: view.plan.title, hash: view.hash, reviewUrl: view.reviewUrl }, reply) : reply;
    if (replies.length > 0) {
      await takeChannelSlot(ctx, posted.channel);
      await call(`replying (${what})`, () =>
        slack.client.chat.postMessage({
          channel: posted.channel,
          thread_ts: threadOf(posted),
          ...inThread(renderCoalescedReply(replies)),
          unfurl_links: false,
          unfurl_media: false,
        }),
      );
    }
    for (const event of events) {
      if (event.type === "plan.reminder" && event.data?.escalate === true && slack.escalationChannel) {
        await takeChannelSlot(ctx, slack.escalationChannel);
        // A link to the thread is a nicety: without it the plan page link still gets people there.
        const permalink = await slack.client.chat.getPermalink({ channel: posted.channel, message_ts: posted.ts }).then(
          (d) => d.permalink,
          () => undefined,
        );
        const where = permalink ? `<${permalink}|the review thread>` : "the review channel";
        // Someone away is escalated to through whoever decides in their place.
        const delegated = (event.data.delegated as { userId: string; for: string }[] | undefined) ?? [];
        const standingIn =
          delegated.length > 0 ? ` (deciding for approvers away: ${delegated.map((d) => `${mention(d.userId)} for ${mention(d.for)}`).join(", ")})` : "";
        await call("escalating", () =>
          slack.client.chat.postMessage({
            channel: slack.escalationChannel!,
            text: `🚨 A high-risk plan has no approvals yet and expires ${slackDate(view.expiresAt)}: ${escapeMrkdwn(view.plan.title)} — see ${where} or ${view.reviewUrl}${standingIn}`,
            unfurl_links: false,
            unfurl_media: false,
          }),
        );
      }
    }
    // The preview always shows the plan as it is now, so an update delivered late is still right;
    // a digest is re-rendered from all its plans, never replaced by this one's preview.
    if (posted.digest) return updateDigest(ctx, digests, posted, what);
    const changedSince = await changedSinceOf(ctx, view);
    await call(`updating the preview (${what})`, () =>
      slack.client.chat.update({ channel: posted.channel, ts: posted.ts, ...renderPlanMessage(planMessageOf(view, changedSince)) }),
    );
  };
  const sink: OutboxHandler = (event, row) => deliverAll([event], [row]);
  sink.many = deliverAll;
  return sink;
}

export function planMessageOf(view: PlanView, changedSince?: PlanDiff): PlanMessage {
  return {
    planId: view.id,
    hash: view.hash,
    status: view.status,
    environment: view.plan.environment,
    title: view.plan.title,
    reason: view.plan.reason,
    agent: view.plan.agent,
    onBehalfOf: view.plan.onBehalfOf,
    expiresAt: view.expiresAt,
    reviewUrl: view.reviewUrl,
    actions: view.preview.actions,
    policy: view.plan.policy,
    risk: view.plan.policy.risk,
    approvals: view.approvals,
    rejection: view.rejection && { userId: view.rejection.userId, reason: view.rejection.reason, for: view.rejection.for },
    revocation: view.revocation && { userId: view.revocation.userId, reason: view.revocation.reason, for: view.revocation.for },
    outcome: view.outcome,
    changedSince,
    supersededBy: view.supersededBy,
    editedBy: view.plan.editedBy?.userId,
    editable: view.status === "pending" && view.plan.policy.edits !== false && view.plan.actions.some(writesValues),
    undoes: view.undoes,
    askedBy: view.plan.askedBy?.userId,
    undoneBy: view.undoneBy,
    undoable: view.undoneBy === undefined && (view.status === "applied" || (view.status === "failed" && view.outcome?.partial === true)),
    watch: view.watch,
  };
}

/** Whether an action writes values a reviewer could edit: an http.json body, a postgres.row row's columns. */
const writesValues = (action: PlanView["plan"]["actions"][number]) =>
  action.kind === "http.json" ? action.body !== undefined : Object.keys(action.values ?? {}).length > 0;

/** The thread reply for an event, from what the event recorded. */
export function threadEventOf(event: PlanEvent, view: PlanView): ThreadEvent | undefined {
  const data = event.data ?? {};
  const userId = event.actor?.userId ?? "";
  // The person the actor acted for, through a delegation.
  const actedFor = typeof event.actor?.for === "string" ? { for: event.actor.for } : {};
  switch (event.type) {
    case "decision.approve":
      return { type: "decision.approve", userId: userId, approvals: Number(data.approvals), requiredApprovals: Number(data.requiredApprovals), ...actedFor };
    case "plan.approved":
      return {
        type: "plan.approved",
        approvers: (data.approvers as string[] | undefined) ?? view.approvals.map((a) => a.userId),
        actedFor:
          (data.actedFor as Record<string, string> | undefined) ?? Object.fromEntries(view.approvals.flatMap((a) => (a.for ? [[a.userId, a.for]] : []))),
      };
    case "plan.rejected":
      return { type: "plan.rejected", userId, reason: String(data.reason ?? view.rejection?.reason ?? ""), ...actedFor };
    case "plan.expired":
      return { type: "plan.expired", ...(typeof data.reason === "string" ? { reason: data.reason } : {}) };
    case "plan.cancelled":
      return { type: "plan.cancelled", agent: view.plan.agent };
    case "plan.executing":
      return { type: "plan.executing" };
    case "plan.reclaimed":
      return { type: "plan.reclaimed", claim: Number(data.claim ?? 0) };
    case "plan.reminder":
      return {
        type: "plan.reminder",
        expiresAt: view.expiresAt,
        missing: (data.missing as string[] | undefined) ?? [],
        delegated: (data.delegated as { userId: string; for: string }[] | undefined) ?? [],
        approvals: Number(data.approvals ?? 0),
        requiredApprovals: Number(data.requiredApprovals ?? 1),
      };
    case "plan.applied":
      return { type: "plan.applied", outcome: view.outcome as Outcome, actions: view.preview.actions };
    case "plan.failed":
      return { type: "plan.failed", outcome: view.outcome as Outcome };
    case "plan.stale":
      return { type: "plan.stale", outcome: view.outcome as Outcome };
    case "plan.revoked":
      return { type: "plan.revoked", userId, reason: String(data.reason ?? view.revocation?.reason ?? ""), ...actedFor };
    case "plan.superseded": {
      // Said in the thread only when someone needs to hear it: an edit, or approvers whose approval is gone.
      const editedBy = (data.editedBy as { userId?: unknown } | undefined)?.userId;
      const approvers = view.approvals.map((a) => a.userId);
      if (typeof editedBy !== "string" && approvers.length === 0) return undefined;
      return {
        type: "plan.superseded",
        ...(typeof editedBy === "string" ? { editedBy } : {}),
        newer: view.supersededBy ?? { hash: String(data.hash ?? ""), reviewUrl: view.reviewUrl },
        approvers,
      };
    }
    case UNDO_PROPOSED_EVENT:
    case UNDO_APPLIED_EVENT: {
      // The undo is another plan: its page is beside this one's.
      const undo = { hash: String(data.hash ?? ""), reviewUrl: view.reviewUrl.replace(/[^/]*$/, String(data.undo ?? "")) };
      if (event.type === UNDO_APPLIED_EVENT) return { type: "undo.applied", undo };
      const askedBy = (data.askedBy as { userId?: unknown } | undefined)?.userId;
      return { type: "undo.proposed", undo, ...(typeof askedBy === "string" ? { askedBy } : { agent: event.actor?.name ?? view.plan.agent }) };
    }
    case NO_EXECUTOR_EVENT:
      return { type: "plan.no_executor", lastSeenAt: typeof data.lastSeenAt === "string" ? data.lastSeenAt : null, grantExpiresAt: view.grantExpiresAt };
    default:
      return undefined;
  }
}

/**
 * Waits for this channel's next free slot (one post a second, shared by every replica); a wait
 * is capped so that no clock jump can stall posts.
 */
async function takeChannelSlot(ctx: ServiceContext, channel: string): Promise<void> {
  const wait = Math.min(await bookChannelSlot(ctx, channel, CHANNEL_SPACING_MS), MAX_SLOT_WAIT_MS);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

async function call<T>(what: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (err) {
    throw deliveryErrorOf(err, what);
  }
}

export type { SlackMessage };
