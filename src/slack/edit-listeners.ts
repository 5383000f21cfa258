import type { App, BlockAction, ButtonAction, ViewSubmitAction } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { shortHash } from "../plan/fingerprint.ts";
import type { ServiceContext } from "../service/context.ts";
import { editForm, editPlan } from "../service/edit/index.ts";
import { ServiceError } from "../service/errors.ts";
import { countIfRefusal } from "../service/operations/index.ts";
import type { DecisionQueue } from "./decision-queue.ts";
import { editModal, editSubmission } from "./edit-modal.ts";
import { refusalText } from "./refusal-text.ts";

/** What the edit listeners share with the others (listeners.ts): how a clicker is told, and what a click names. */
export interface EditListenerDeps {
  ctx: ServiceContext;
  logger: Logger;
  teamId: () => string;
  decisions: DecisionQueue;
  foreign: (...teamIds: (string | undefined)[]) => boolean;
  tellClicker: (client: WebClient, channel: string | undefined, user: string, text: string) => Promise<void>;
  clickedPlan: (body: BlockAction<ButtonAction>, client: WebClient) => Promise<{ planId: string; hash: string } | undefined>;
}

/**
 * Edit before approve: the Edit button opens a dialog of the plan's values for someone who may
 * edit it (anyone else is told why, at once), and its submission makes the new version. Text that
 * is not JSON keeps the dialog open with the reason beside the field; everything else the service
 * decides after the ack, and a refusal is told to the editor alone.
 */
export function registerEditListeners(app: App, deps: EditListenerDeps): void {
  const { ctx, logger } = deps;
  const refused = async (err: unknown, tell: (text: string) => Promise<void>) => {
    if (err instanceof ServiceError) logger.info({ code: err.code }, "edit refused");
    else logger.error({ err }, "edit failed");
    await countIfRefusal(ctx, err);
    await tell(refusalText(err));
  };

  app.action<BlockAction<ButtonAction>>("edit", async ({ ack, body, client }) => {
    await ack();
    const channel = body.channel?.id;
    const value = await deps.clickedPlan(body, client);
    if (!value) return;
    const tell = (text: string) => deps.tellClicker(client, channel, body.user.id, text);
    let form: Awaited<ReturnType<typeof editForm>>;
    try {
      form = await editForm(ctx, { planId: value.planId, hash: value.hash, person: { userId: body.user.id, via: "slack" } });
    } catch (err) {
      return refused(err, tell);
    }
    // views.open must happen within 3 s of the click, so it goes direct, not through the outbox.
    await client.views
      .open({ trigger_id: body.trigger_id, view: editModal(form, { channel: channel ?? "", reviewUrl: `${ctx.config.publicUrl}/plans/${form.planId}` }) })
      .catch(async (err: unknown) => {
        logger.warn({ err }, "could not open the edit dialog");
        await tell("Slack would not open the edit dialog; try again, or edit the plan on its page.");
      });
  });

  app.view<ViewSubmitAction>("edit", async ({ ack, body, view, client }) => {
    const submitted = editSubmission(view);
    if (submitted && Object.keys(submitted.errors).length > 0) {
      await ack({ response_action: "errors", errors: submitted.errors });
      return;
    }
    await ack();
    if (!submitted) return; // not a dialog this Countersign opened
    const { meta, values } = submitted;
    deps.decisions.push(async () => {
      const tell = (text: string) => deps.tellClicker(client, meta.channel || undefined, body.user.id, text);
      if (deps.foreign(body.user.team_id, body.team?.id))
        return tell(`Countersign accepts edits only from members of its own workspace (${deps.teamId()}); nothing was edited.`);
      try {
        const { plan } = await editPlan(ctx, { planId: meta.planId, hash: meta.hash, person: { userId: body.user.id, via: "slack" }, values });
        await tell(`Your edit is version ${shortHash(plan.hash)}, posted in this plan's thread. Someone else must approve it: you are now its requester.`);
      } catch (err) {
        await refused(err, tell);
      }
    });
  });
}
