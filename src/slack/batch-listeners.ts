import type { App, BlockAction, ButtonAction, ViewSubmitAction } from "@slack/bolt";
import type { View } from "@slack/types";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { decideBatch, openBatch } from "../service/batch/index.ts";
import type { ServiceContext } from "../service/context.ts";
import { ServiceError } from "../service/errors.ts";
import { countIfRefusal } from "../service/operations/index.ts";
import {
  BATCH_IDS,
  batchDecidedView,
  batchNoticeView,
  batchOpeningView,
  batchRejectView,
  batchView,
  batchWorkingView,
  SLACK_BATCH_PLANS,
  type BatchModalMeta,
  type BatchRejectMeta,
} from "./batch-modal.ts";
import type { DecisionQueue } from "./decision-queue.ts";
import { escapeMrkdwn } from "./escape.ts";

export interface BatchListenerDeps {
  ctx: ServiceContext;
  logger: Logger;
  /** The workspace this Countersign belongs to; clicks from any other are refused. */
  teamId: () => string;
  /** Where the work after an ack goes (the same queue as single decisions). */
  decisions: DecisionQueue;
}

const FOREIGN = "Countersign accepts decisions only from members of its own workspace; nothing was recorded.";

/**
 * Batches of alike plans in Slack: "Review N like plans" (App Home, digests) opens a modal at
 * once and fills it with the batch once it is recorded; its submit is Approve-all, its
 * Reject-all button asks for one reason. Every submission is acknowledged at once with a view
 * saying the plans are being decided, and updated with what became of each plan after.
 */
export function registerBatchListeners(app: App, deps: BatchListenerDeps): void {
  const { ctx, logger } = deps;
  const foreign = (...teamIds: (string | undefined)[]) => teamIds.some((id) => id !== undefined && id !== deps.teamId());
  const update = (client: WebClient, viewId: string, view: View) =>
    client.views.update({ view_id: viewId, view }).catch((err: unknown) => logger.warn({ err }, "could not update a batch's view"));

  app.action<BlockAction<ButtonAction>>(new RegExp(`^${BATCH_IDS.open}_\\d+$`), async ({ ack, body, client }) => {
    await ack();
    const like = parsed<{ like: string }>(body.actions[0]?.value, (v) => typeof v.like === "string");
    const refused = foreign(body.user.team_id, body.team?.id) ? FOREIGN : like ? undefined : "This button does not name a plan; nothing was opened.";
    // views.open must come within 3 s of the click: a placeholder now, the batch once it is read and recorded.
    const opened = await client.views
      .open({ trigger_id: body.trigger_id, view: refused ? batchNoticeView(refused) : batchOpeningView() })
      .catch((err: unknown) => logger.warn({ err }, "could not open a batch's modal"));
    const viewId = opened?.view?.id;
    if (refused || !like || !viewId) return;
    deps.decisions.push(async () => {
      const view = await openBatch(ctx, { reviewer: { userId: body.user.id, via: "slack" }, like: like.like, shown: SLACK_BATCH_PLANS }).then(
        (batch) => batchView(batch),
        (err: unknown) => noticeOf(err, "opening these plans"),
      );
      await update(client, viewId, view);
    });
  });

  app.action<BlockAction<ButtonAction>>(BATCH_IDS.rejectButton, async ({ ack, body, client }) => {
    await ack();
    const meta = parsed<BatchModalMeta & { count: number }>(body.actions[0]?.value, (v) => typeof v.batchId === "string" && typeof v.count === "number");
    const rootViewId = body.view?.id;
    if (!meta || !rootViewId) return;
    await client.views
      .push({ trigger_id: body.trigger_id, view: batchRejectView({ batchId: meta.batchId, rootViewId }, meta.count) })
      .catch((err: unknown) => logger.warn({ err }, "could not open the batch's reject dialog"));
  });

  app.view<ViewSubmitAction>(BATCH_IDS.approve, async ({ ack, body, view, client }) => {
    const meta = parsed<BatchModalMeta>(view.private_metadata, (v) => typeof v.batchId === "string");
    if (!meta || foreign(body.user.team_id, body.team?.id)) {
      await ack({ response_action: "update", view: batchNoticeView(meta ? FOREIGN : "This dialog does not name a batch; nothing was decided.") });
      return;
    }
    await ack({ response_action: "update", view: batchWorkingView("approve") });
    deps.decisions.push(async () => {
      await update(client, view.id, await decided(ctx, logger, { batchId: meta.batchId, userId: body.user.id, verdict: "approve" }));
    });
  });

  app.view<ViewSubmitAction>(BATCH_IDS.reject, async ({ ack, body, view, client }) => {
    const reason = view.state.values[BATCH_IDS.reason]?.[BATCH_IDS.reason]?.value?.trim() ?? "";
    if (!reason) {
      await ack({ response_action: "errors", errors: { [BATCH_IDS.reason]: "Say why, so every plan's agent and requester know what to change." } });
      return;
    }
    const meta = parsed<BatchRejectMeta>(view.private_metadata, (v) => typeof v.batchId === "string" && typeof v.rootViewId === "string");
    if (!meta || foreign(body.user.team_id, body.team?.id)) {
      await ack({ response_action: "update", view: batchNoticeView(meta ? FOREIGN : "This dialog does not name a batch; nothing was decided.") });
      return;
    }
    await ack({ response_action: "update", view: batchWorkingView("reject") });
    deps.decisions.push(async () => {
      const answer = await decided(ctx, logger, { batchId: meta.batchId, userId: body.user.id, verdict: "reject", reason });
      // The batch's own modal is beneath this dialog: it shows the answer too, so nobody approves from it afterwards.
      await update(client, view.id, answer);
      await update(client, meta.rootViewId, answer);
    });
  });
}

/** Decides the batch and says what became of each plan, or why nothing was decided. */
async function decided(
  ctx: ServiceContext,
  logger: Logger,
  input: { batchId: string; userId: string; verdict: "approve" | "reject"; reason?: string },
): Promise<View> {
  try {
    return batchDecidedView(
      await decideBatch(ctx, { batchId: input.batchId, actor: { userId: input.userId, via: "slack" }, verdict: input.verdict, reason: input.reason }),
    );
  } catch (err) {
    await countIfRefusal(ctx, err);
    if (!(err instanceof ServiceError)) logger.error({ err, batchId: input.batchId }, "a batch could not be decided");
    return noticeOf(err, "deciding these plans");
  }
}

/** A refusal of the batch as a whole (expired, not theirs, nothing alike waits) in Slack's words. */
function noticeOf(err: unknown, doing: string): View {
  if (!(err instanceof ServiceError))
    return batchNoticeView(`Countersign could not finish ${doing} because of an internal error; nothing more was decided. Try again, or use the browser.`);
  switch (err.code) {
    case "batch_expired":
      return batchNoticeView(
        "This batch expired ten minutes after it was opened; nothing was decided through it. Open the like plans again to review them as they are now.",
      );
    case "not_found":
      return batchNoticeView(`Nothing was decided: ${escapeMrkdwn(err.message)}.`);
    default:
      return batchNoticeView(`Countersign refused that (${err.code}): ${escapeMrkdwn(err.message)}`);
  }
}

/** A JSON value from a button or a view's metadata, when it has the expected shape. */
function parsed<T>(raw: string | undefined, valid: (value: Record<string, unknown>) => boolean): T | undefined {
  try {
    const value = JSON.parse(raw ?? "") as unknown;
    return typeof value === "object" && value !== null && valid(value as Record<string, unknown>) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}
