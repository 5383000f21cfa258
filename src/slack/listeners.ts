import type { App, BlockAction, ButtonAction, SlashCommand, ViewSubmitAction } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { ServiceContext } from "../service/context.ts";
import { plansWaitingFor } from "../service/review/index.ts";
import type { DecideInput } from "../service/decide/index.ts";
import type { DecisionQueue } from "./decision-queue.ts";
import { decideDurably } from "./durable-decision.ts";
import { escapeMrkdwn } from "./escape.ts";
import { publishHome } from "./home-publish.ts";
import { refusalText } from "./refusal-text.ts";
import { countIfRefusal } from "../service/operations/index.ts";
import { rejectModal, revokeModal } from "./reason-modal.ts";
import { registerBatchListeners } from "./batch-listeners.ts";
import { revokePlan } from "../service/decide/index.ts";
import { registerEditListeners } from "./edit-listeners.ts";
import { registerUndoListeners } from "./undo-listeners.ts";
import { answerDelegateCommand, DELEGATE_USAGE } from "./delegate-command.ts";

/** The plan and exact hash a button was rendered for; the click decides on exactly this. */
interface ButtonValue {
  planId: string;
  hash: string;
}

export interface ListenerDeps {
  ctx: ServiceContext;
  logger: Logger;
  /** The workspace this Countersign belongs to; clicks from any other (Slack Connect) are refused. */
  teamId: () => string;
  /** A one-time browser sign-in link for a Slack user, when the browser door offers one. */
  loginLink?: (userId: string) => Promise<string>;
  /** How long a click waits for an unreachable database before the clicker is told it was not recorded. */
  decisionRetryMs?: number;
  /** Where decisions go after the ack (see DecisionQueue). */
  decisions: DecisionQueue;
  /** Aborted when the door stops: a decision still waiting for the database gives up and says so. */
  stopping?: AbortSignal;
}

/**
 * Slack's door: each listener acknowledges at once, builds the actor from the verified payload
 * and calls one service verb. Refusals go back to the clicker only, as an ephemeral message.
 * Decisions are queued after the ack (deps.decisions), never run in the ack's turn.
 */
export function registerListeners(app: App, deps: ListenerDeps): void {
  const { ctx, logger } = deps;

  /** Any workspace id in the payload (the user's home, the team the action came through) other than ours. */
  const foreign = (...teamIds: (string | undefined)[]) => teamIds.some((id) => id !== undefined && id !== deps.teamId());
  /** In the channel clicked in; a click on the Home tab has none, so the answer is shown on the clicker's rebuilt Home. */
  const tellClicker = async (client: WebClient, channel: string | undefined, user: string, text: string) => {
    const told = channel ? client.chat.postEphemeral({ channel, user, text }) : publishHome(ctx, client, user, text);
    await told.catch((err: unknown) => logger.warn({ err }, "could not tell the clicker why"));
  };

  /** The plan and hash a click is about, or undefined after telling the clicker why it counts for nothing. */
  const clickedPlan = async (body: BlockAction<ButtonAction>, client: WebClient): Promise<ButtonValue | undefined> => {
    const channel = body.channel?.id;
    if (foreign(body.user.team_id, body.team?.id)) {
      await tellClicker(
        client,
        channel,
        body.user.id,
        `Countersign accepts decisions only from members of its own workspace (${deps.teamId()}); nothing was recorded.`,
      );
      return undefined;
    }
    const value = parseButtonValue(body.actions[0]?.value);
    if (!value) await tellClicker(client, channel, body.user.id, "This button does not name a plan; nothing was recorded.");
    return value;
  };

  /** Decides for the clicker; a refusal is told to them. */
  const decideFor = async (client: WebClient, channel: string | undefined, input: DecideInput) => {
    const tell = (text: string) => tellClicker(client, channel, input.actor.userId, text);
    try {
      const result = await decideDurably(ctx, input, { windowMs: deps.decisionRetryMs, tell, signal: deps.stopping });
      // Recorded, but the target could not be re-read at the click: the clicker hears so.
      if (result?.recheckFailed)
        await tell(
          `Your approval was recorded, but Countersign could not re-check the target against the preview (${escapeMrkdwn(result.recheckFailed)}); the executor re-checks before writing anything.`,
        );
    } catch (err) {
      logRefusal(logger, err);
      await countIfRefusal(ctx, err);
      await tell(refusalText(err));
    }
  };

  app.action<BlockAction<ButtonAction>>("approve", async ({ ack, body, client }) => {
    await ack();
    deps.decisions.push(async () => {
      const value = await clickedPlan(body, client);
      if (!value) return;
      await decideFor(client, body.channel?.id, { planId: value.planId, hash: value.hash, actor: { userId: body.user.id, via: "slack" }, verdict: "approve" });
    });
  });

  app.action<BlockAction<ButtonAction>>("reject", async ({ ack, body, client }) => {
    await ack();
    const channel = body.channel?.id;
    const value = await clickedPlan(body, client);
    if (!value) return;
    // views.open must happen within 3 s of the click, so it goes direct, not through the outbox.
    await client.views.open({ trigger_id: body.trigger_id, view: rejectModal({ ...value, channel: channel ?? "" }) }).catch(async (err: unknown) => {
      logger.warn({ err }, "could not open the reject dialog");
      await tellClicker(client, channel, body.user.id, "Slack would not open the reject dialog; try again, or reject from the plan page.");
    });
  });

  // Revoke: the reason modal is its confirmation, as for Reject.
  app.action<BlockAction<ButtonAction>>("revoke", async ({ ack, body, client }) => {
    await ack();
    const channel = body.channel?.id;
    const value = await clickedPlan(body, client);
    if (!value) return;
    await client.views.open({ trigger_id: body.trigger_id, view: revokeModal({ ...value, channel: channel ?? "" }) }).catch(async (err: unknown) => {
      logger.warn({ err }, "could not open the revoke dialog");
      await tellClicker(client, channel, body.user.id, "Slack would not open the revoke dialog; try again, or revoke from the plan page.");
    });
  });

  app.view<ViewSubmitAction>("revoke", async ({ ack, body, view, client }) => {
    const submitted = await reasonSubmitted(ack, view, "Say why, so the agent and the approvers know.");
    if (!submitted) return;
    const { reason, meta } = submitted;
    deps.decisions.push(async () => {
      const tell = (text: string) => tellClicker(client, meta.channel, body.user.id, text);
      if (foreign(body.user.team_id, body.team?.id))
        return tell(`Countersign accepts revocations only from members of its own workspace (${deps.teamId()}); nothing changed.`);
      try {
        await revokePlan(ctx, { planId: meta.planId, person: { userId: body.user.id, via: "slack" }, reason });
      } catch (err) {
        logRefusal(logger, err);
        await countIfRefusal(ctx, err);
        await tell(refusalText(err));
      }
    });
  });

  registerEditListeners(app, { ...deps, foreign, tellClicker, clickedPlan });
  // "Propose undo" on an applied plan (undo-listeners.ts).
  registerUndoListeners(app, { ctx, logger, decisions: deps.decisions, tellClicker, clickedPlan });

  app.action("view_full_plan", async ({ ack }) => {
    await ack(); // a link button; Slack still tells us about the click
  });

  // "Review N like plans" and what its modal submits (batch-listeners.ts).
  registerBatchListeners(app, { ctx, logger, teamId: deps.teamId, decisions: deps.decisions });

  app.view<ViewSubmitAction>("reject", async ({ ack, body, view, client }) => {
    const submitted = await reasonSubmitted(ack, view, "Say why, so the agent and the requester know what to change.");
    if (!submitted) return;
    const { reason, meta } = submitted;
    deps.decisions.push(async () => {
      if (foreign(body.user.team_id, body.team?.id)) {
        return tellClicker(
          client,
          meta.channel,
          body.user.id,
          `Countersign accepts decisions only from members of its own workspace (${deps.teamId()}); nothing was recorded.`,
        );
      }
      await decideFor(client, meta.channel, { planId: meta.planId, hash: meta.hash, actor: { userId: body.user.id, via: "slack" }, verdict: "reject", reason });
    });
  });

  // The Home tab is rebuilt from the database each time it is opened (Bolt acknowledges events itself).
  app.event("app_home_opened", async ({ event, body, client }) => {
    if (event.tab !== "home" || foreign(body.team_id)) return;
    await publishHome(ctx, client, event.user).catch((err: unknown) => logger.warn({ err }, "could not publish the Home tab"));
  });

  app.command("/countersign", async ({ ack, command, respond }) => {
    const [verb] = command.text.trim().split(/\s+/);
    if (foreign(command.team_id)) {
      await ack({ response_type: "ephemeral", text: "Countersign answers only members of its own workspace." });
      return;
    }
    switch (verb) {
      case "list":
        await ack({ response_type: "ephemeral", text: await pendingForUser(ctx, command) });
        return;
      case "login":
        if (!deps.loginLink) {
          await ack({ response_type: "ephemeral", text: "Browser sign-in is switched off on this Countersign." });
          return;
        }
        await ack({ response_type: "ephemeral", text: `Your one-time sign-in link (valid 5 minutes, usable once): ${await deps.loginLink(command.user_id)}` });
        return;
      case "delegate":
        // Slack is asked who the delegate is: answered through response_url, after the ack.
        await ack();
        await respond({ response_type: "ephemeral", text: await answerDelegateCommand(ctx, command.user_id, command.text) }).catch((err: unknown) =>
          logger.warn({ err }, "could not answer /countersign delegate"),
        );
        return;
      default:
        await ack({
          response_type: "ephemeral",
          text: `*/countersign list* — pending plans you may decide\n*/countersign login* — a one-time link that signs you into the browser as yourself\n${DELEGATE_USAGE}\n*/countersign help* — this`,
        });
    }
  });
}

/** Pending plans this person may decide, newest first, as ephemeral mrkdwn. */
async function pendingForUser(ctx: ServiceContext, command: SlashCommand): Promise<string> {
  const { plans, uncheckedGroups } = await plansWaitingFor(ctx, command.user_id);
  const caveat =
    uncheckedGroups.length > 0
      ? `\n_Slack could not say just now whether you are in ${uncheckedGroups.map(escapeMrkdwn).join(", ")}; plans for those groups are not listed._`
      : "";
  if (plans.length === 0) return "Nothing is waiting for your decision." + caveat;
  return (
    [
      `${plans.length} plan(s) waiting for your decision:`,
      ...plans.map(
        (p) =>
          `• <${p.reviewUrl}|${escapeMrkdwn(p.title).replace(/[|>]/g, " ").slice(0, 150)}> — expires <!date^${Math.floor(p.expiresAt.getTime() / 1000)}^{date_short_pretty} {time}|${p.expiresAt.toISOString()}>`,
      ),
    ].join("\n") + caveat
  );
}

function parseButtonValue(raw: string | undefined): ButtonValue | undefined {
  try {
    const value = JSON.parse(raw ?? "") as Partial<ButtonValue>;
    return typeof value.planId === "string" && typeof value.hash === "string" ? { planId: value.planId, hash: value.hash } : undefined;
  } catch {
    return undefined;
  }
}

function logRefusal(logger: Logger, err: unknown): void {
  if (err instanceof Error && err.name === "ServiceError") logger.info({ code: (err as { code?: string }).code }, "decision refused");
  else logger.error({ err }, "decision failed");
}

/**
 * A reason dialog's submission (reject, revoke): acknowledged at once — with the field's error
 * when the reason is empty, so Slack keeps the dialog open — and the plan it was opened for.
 * Undefined when there is nothing to act on.
 */
async function reasonSubmitted(
  ack: (response?: { response_action: "errors"; errors: Record<string, string> }) => Promise<void>,
  view: ViewSubmitAction["view"],
  whenEmpty: string,
): Promise<{ reason: string; meta: ButtonValue & { channel: string } } | undefined> {
  const reason = view.state.values.reason?.reason?.value?.trim() ?? "";
  if (!reason) {
    await ack({ response_action: "errors", errors: { reason: whenEmpty } });
    return undefined;
  }
  await ack();
  try {
    return { reason, meta: JSON.parse(view.private_metadata) as ButtonValue & { channel: string } };
  } catch {
    return undefined; // not a dialog this Countersign opened
  }
}
