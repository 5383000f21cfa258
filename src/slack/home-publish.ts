import type { View } from "@slack/types";
import { WebAPIPlatformError, WebAPIRateLimitedError, type WebClient } from "@slack/web-api";
import { sleepUnlessAborted } from "../abortable-sleep.ts";
import type { ServiceContext } from "../service/context.ts";
import { coveredLater, decidersOfPlans, homeTabFor } from "../service/review/index.ts";
import { DeliveryError, type OutboxHandler } from "../service/delivery/index.ts";
import { listDelegations } from "../service/delegation/index.ts";
import { type PlanEvent } from "../service/records/index.ts";
import { HOME_SHOWN, renderHome } from "./home-view.ts";
import { slackDirectory } from "./directory.ts";
import { deliveryErrorOf } from "./slack-errors.ts";

/**
 * Rebuilds one person's whole Home tab from the database and publishes it. Idempotent: the view
 * is what is true now, so publishing twice, late, or for a coalesced run of events is harmless.
 * `notice` tells them what became of a click made on the tab (there is no channel to answer in);
 * it stays until the tab is next rebuilt.
 */
export async function publishHome(ctx: ServiceContext, client: WebClient, userId: string, notice?: string): Promise<void> {
  const tab = await homeTabFor(ctx, { userId, shown: HOME_SHOWN });
  const delegations = await listDelegations(ctx, { person: userId });
  // Our blocks are loosely typed on purpose (plan-message.ts Block); the renderer's tests and the emulator pin their shapes.
  await client.views.publish({ user_id: userId, view: renderHome({ ...tab, notice, viewer: userId, delegations }) as unknown as View });
}

/**
 * Least time between two publishes of one person's Home by a process's outbox worker: a tab
 * rebuilt a second late is as good as at once for a person. Under a steady stream of plans (the
 * intake bench) every 250 ms pass caught the Home lane up and republished each approver's Home, up
 * to four times a second, reading their 200 soonest plans each time; now at most once a second.
 * (Slack counts views.publish, a Tier 4 method of 100+ a minute, per app and workspace: this spaces
 * one person's publishes, it does not budget the workspace's.)
 */
export const HOME_SPACING_MS = 1000;

export interface HomeSinkOptions {
  /** Default HOME_SPACING_MS. */
  spacingMs?: number;
  /** How a delivery waits out the spacing (tests step in here). Default: a timer. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Once aborted (the server is stopping) nothing waits: the rest is published at once. */
  signal?: AbortSignal;
}

/**
 * The "slack_home" outbox sink: after a plan event, republishes the Home of everyone who may
 * decide the plan (listed users, and group members looked up now), except those a later queued
 * row will republish anyway (coveredLater): a burst of 50 transitions for one approver costs
 * about one views.publish. Queued rows are taken up to 100 at a time, whatever their plans
 * (acrossPlans), and delivered as one. A person this sink published (or tried to) less than
 * `spacingMs` ago is waited for, the lane held meanwhile, and then it asks again whether a row
 * queued since covers them. Rate limited: the row is retried after Slack's Retry-After, and
 * republishing those already done is harmless.
 */
export function homeSink(ctx: ServiceContext, client: WebClient, options: HomeSinkOptions = {}): OutboxHandler {
  const { spacingMs = HOME_SPACING_MS, sleep = sleepUnlessAborted, signal } = options;
  // Its own lookup and cache of group members, through the outbox's client: a 429 reaches the
  // outbox, and the Home's lookups neither warm nor spend the cache a click's decision reads.
  const home: ServiceContext = { ...ctx, directory: slackDirectory(client) };
  /** When each person's Home was last published or tried (performance.now), while within spacingMs. */
  const publishedAt = new Map<string, number>();
  // One delivery for a run of rows, of one plan or many (acrossPlans): everyone they concern, each
  // published once, except those a row queued after the last of them will republish anyway.
  const deliver = async (events: readonly PlanEvent[], lastRowId: number): Promise<void> => {
    // Every row publishes for its plan. Only Home events are queued now (HOME_EVENTS), but a row an
    // earlier version queued for another (plan.executing…) counts in coveredLater like any row, so
    // delivering it as a no-op would leave the person it covered unpublished.
    const concerned = [...new Set(events.map((e) => e.planId))];
    const found = await decidersOfPlans(home, concerned);
    if (!found) return; // the plans are gone: nothing of them is on anyone's Home
    let covered = await coveredLater(home, lastRowId, found.deciders);
    const now = performance.now();
    for (const [userId, at] of publishedAt) if (now - at >= spacingMs) publishedAt.delete(userId);
    const wait = Math.max(0, ...found.deciders.filter((d) => !covered.has(d.userId)).map((d) => (publishedAt.get(d.userId) ?? -Infinity) + spacingMs - now));
    if (wait > 0 && !signal?.aborted) {
      await sleep(wait, signal);
      covered = await coveredLater(home, lastRowId, found.deciders);
    }
    let failed: DeliveryError | undefined;
    for (const { userId } of found.deciders) {
      if (covered.has(userId)) continue;
      // A call Slack refuses or fails counts against its limit too.
      publishedAt.set(userId, performance.now());
      try {
        await publishHome(home, client, userId);
      } catch (err) {
        // A rate limit holds for the rest too. Slack refusing one person (a deactivated user, an
        // app whose Home tab is not enabled yet) is not retried: no retry would change its answer,
        // and the tab is rebuilt whenever they open it. Anything else (5xx, network) is retried.
        if (err instanceof WebAPIRateLimitedError) throw deliveryErrorOf(err, `publishing ${userId}'s Home`);
        if (err instanceof WebAPIPlatformError) ctx.logger.warn({ user: userId, error: err.data.error }, "Slack refused to publish a Home tab");
        else failed ??= deliveryErrorOf(err, `publishing ${userId}'s Home`);
      }
    }
    if (failed) throw failed;
    if (found.unchecked.length > 0) {
      const groups = found.unchecked.map((u) => `${u.group} (${u.error})`).join(", ");
      throw new DeliveryError(`could not look up the members of ${groups} to update their Home`);
    }
  };
  const sink: OutboxHandler = (event, row) => deliver([event], row.id);
  sink.many = (events, rows) => deliver(events, Math.max(...rows.map((r) => r.id)));
  sink.acrossPlans = true;
  return sink;
}
