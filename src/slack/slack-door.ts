import { App, LogLevel, SocketModeReceiver } from "@slack/bolt";
import type { Context } from "hono";
import type { Logger } from "pino";
import type { Config } from "../config/load.ts";
import type { PlanDocument } from "../plan/schema.ts";
import type { ServiceContext } from "../service/context.ts";
import type { OutboxHandler } from "../service/delivery/index.ts";
import { deliveryClient, slackSink } from "./deliver.ts";
import type { ApproverDirectory, PeopleDirectory, ProfileDirectory } from "../service/context.ts";
import { slackDirectory } from "./directory.ts";
import { slackPeople } from "./people.ts";
import { slackProfiles } from "./profiles.ts";
import { HonoReceiver } from "./hono-receiver.ts";
import { DecisionQueue } from "./decision-queue.ts";
import { boltLogger } from "./bolt-logger.ts";
import { slackStartupError } from "./slack-startup-error.ts";
import { registerListeners, type ListenerDeps } from "./listeners.ts";
import { reviewChannelOf } from "../service/records/index.ts";
import { DIGEST_AFTER_SECONDS } from "../config/schema.ts";

export interface SlackDoor {
  /** `POST /slack/events` in HTTP mode; undefined in Socket Mode. */
  handle: ((c: Context) => Promise<Response>) | undefined;
  /** The "slack" outbox sink. */
  deliver: OutboxHandler;
  teamId: string;
  mode: "http" | "socket";
  /** User group membership for approver groups. */
  directory: ApproverDirectory;
  /** People's display names, for the browser's pages. */
  people: PeopleDirectory;
  /** Who is a bot, and people's time zones, for delegations. */
  profiles: ProfileDirectory;
  /** Stops taking clicks (Socket Mode) and waits for every acknowledged decision; one still waiting for the database gives up and tells its clicker. */
  stop(): Promise<void>;
}

/**
 * Wires Bolt to Countersign: our receiver on our own HTTP server (or Bolt's Socket Mode
 * receiver), listeners that call the service, and the outbox sink that posts and updates.
 */
export async function openSlackDoor(
  ctx: ServiceContext,
  slack: Extract<Config["slack"], { enabled: true }>,
  config: Pick<Config, "targets">,
  logger: Logger,
  options: Pick<ListenerDeps, "loginLink"> = {},
): Promise<SlackDoor> {
  const log = logger.child({ door: "slack" });
  const clientOptions = { ...(slack.apiUrl ? { slackApiUrl: slack.apiUrl } : {}), retryConfig: { retries: 1, factor: 1, minTimeout: 200, maxTimeout: 500 } };
  const socket = slack.appToken !== undefined;
  // Signatures are checked against the wall clock: it is Slack's clock they must agree with.
  const httpReceiver = socket ? undefined : new HonoReceiver(slack.signingSecret!, log, () => new Date());
  // apps.connections.open goes to the same Web API as every other call (SLACK_API_URL); its retries stay
  // the Socket Mode client's own, which keep trying through an outage instead of giving up after one.
  const receiver =
    httpReceiver ??
    new SocketModeReceiver({
      appToken: slack.appToken!,
      logger: boltLogger(log),
      logLevel: LogLevel.WARN,
      installerOptions: { clientOptions: slack.apiUrl ? { slackApiUrl: slack.apiUrl } : {} },
    });
  // deferInitialization: Bolt's constructor would otherwise fire auth.test unawaited, and a bad token then crashes the process.
  // No conversation store: nothing reads Bolt's per-conversation state, and its middleware would run on every click.
  const app = new App({
    token: slack.botToken,
    receiver,
    deferInitialization: true,
    convoStore: false,
    clientOptions,
    logger: boltLogger(log),
    logLevel: LogLevel.WARN,
  });
  const told = (variable: "SLACK_BOT_TOKEN" | "SLACK_APP_TOKEN") => (err: unknown) => {
    throw slackStartupError(err, variable, slack.apiUrl) ?? err;
  };
  const auth = await app
    .init()
    .then(() => app.client.auth.test())
    .catch(told("SLACK_BOT_TOKEN"));
  const teamId = String(auth.team_id);
  const decisions = new DecisionQueue((err) => log.error({ err }, "a Slack decision failed"));
  const stopping = new AbortController();
  registerListeners(app, {
    ctx,
    logger: log,
    teamId: () => teamId,
    decisionRetryMs: slack.decisionRetrySeconds && slack.decisionRetrySeconds * 1000,
    decisions,
    stopping: stopping.signal,
    ...options,
  });
  if (socket) await app.start().catch(told("SLACK_APP_TOKEN"));

  const client = deliveryClient(slack.botToken, slack.apiUrl);
  // The same rule that named the plan's outbox lane (slack:<channel>).
  const channelOf = (doc: PlanDocument) => reviewChannelOf({ targets: config.targets, slack }, doc) ?? slack.reviewChannel;
  log.info({ mode: socket ? "socket" : "http", teamId, reviewChannel: slack.reviewChannel }, "Slack connected");
  return {
    handle: httpReceiver ? (c) => httpReceiver.handle(c) : undefined,
    deliver: slackSink(ctx, {
      client,
      channelOf,
      escalationChannel: slack.escalationChannel,
      digestAfterSeconds: slack.digest?.afterSeconds ?? DIGEST_AFTER_SECONDS,
    }),
    teamId,
    mode: socket ? "socket" : "http",
    directory: slackDirectory(app.client),
    people: slackPeople(app.client),
    profiles: slackProfiles(app.client),
    stop: async () => {
      if (socket) await app.stop();
      stopping.abort();
      await decisions.drain();
    },
  };
}
