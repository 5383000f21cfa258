import type { App, BlockAction, ButtonAction } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { shortHash } from "../plan/fingerprint.ts";
import type { ServiceContext } from "../service/context.ts";
import { ServiceError } from "../service/errors.ts";
import { countIfRefusal } from "../service/operations/index.ts";
import { proposeUndo } from "../service/undo/index.ts";
import type { DecisionQueue } from "./decision-queue.ts";
import { escapeMrkdwn } from "./escape.ts";
import { refusalText } from "./refusal-text.ts";

/** What the undo listener shares with the others (listeners.ts): how a clicker is told, and what a click names. */
export interface UndoListenerDeps {
  ctx: ServiceContext;
  logger: Logger;
  decisions: DecisionQueue;
  tellClicker: (client: WebClient, channel: string | undefined, user: string, text: string) => Promise<void>;
  clickedPlan: (body: BlockAction<ButtonAction>, client: WebClient) => Promise<{ planId: string; hash: string } | undefined>;
}

/**
 * Propose undo, on an applied plan's message: after the ack, the service makes the undo (it is
 * posted as its own message, and linked from this plan's thread) or says why not, to the clicker
 * alone. A second click while that undo is open points the clicker at it.
 */
export function registerUndoListeners(app: App, deps: UndoListenerDeps): void {
  const { ctx, logger } = deps;
  app.action<BlockAction<ButtonAction>>("propose_undo", async ({ ack, body, client }) => {
    await ack();
    deps.decisions.push(async () => {
      const channel = body.channel?.id;
      const value = await deps.clickedPlan(body, client);
      if (!value) return;
      const tell = (text: string) => deps.tellClicker(client, channel, body.user.id, text);
      try {
        const { plan } = await proposeUndo(ctx, { planId: value.planId, asker: { person: { userId: body.user.id, via: "slack" } } });
        await tell(
          `Your undo is plan ${shortHash(plan.hash)}, posted for review: <${plan.reviewUrl}|open it>. Someone else must approve it: you asked for it.`,
        );
      } catch (err) {
        if (err instanceof ServiceError) logger.info({ code: err.code }, "undo refused");
        else logger.error({ err }, "undo failed");
        await countIfRefusal(ctx, err);
        // Who may ask is not who may approve: the service's own sentence says it.
        await tell(err instanceof ServiceError && err.code === "not_an_approver" ? `No undo was proposed: ${escapeMrkdwn(err.message)}` : refusalText(err));
      }
    });
  });
}
