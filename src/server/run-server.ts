import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname as machineName } from "node:os";
import { serve, type ServerType } from "@hono/node-server";
import type { Logger } from "pino";
import { createReadOnlyHttp } from "../adapters/read-only-http.ts";
import { defaultRegistry } from "../adapters/registry.ts";
import { openTargetReaders, type TargetReaders } from "../adapters/target-readers.ts";
import type { Config } from "../config/load.ts";
import type { ServiceContext } from "../service/context.ts";
import { expireDue } from "../service/watch/index.ts";
import { remindDue } from "../service/watch/index.ts";
import { sealAudit } from "../service/audit/index.ts";
import { signSeals } from "../service/audit/index.ts";
import { auditSealing, sealHandlers } from "./audit-sealing.ts";
import { watchTargets } from "../service/watch/index.ts";
import { DEFAULT_RETENTION, sweepRetention } from "../service/operations/index.ts";
import { rollUpMetrics } from "../service/operations/index.ts";
import { DEFAULT_DELIVERY, type DeliveryPolicy, type OutboxHandler } from "../service/delivery/index.ts";
import { startOutboxWorker } from "../service/delivery/index.ts";
import { webhookSink } from "../webhooks/webhook-sink.ts";
import { redactionRules } from "../policy/redact.ts";
import { openSlackDoor } from "../slack/slack-door.ts";
import { deliveryClient } from "../slack/deliver.ts";
import { homeSink } from "../slack/home-publish.ts";
import { HOME_SINK } from "../service/records/index.ts";
import { createLoginLink } from "../service/sign-in/index.ts";
import { ListeningPlanSignals } from "../service/records/index.ts";
import { PauseWatch } from "../service/operations/index.ts";
import { watchExecutors } from "../service/execution/index.ts";
import { refreshNames } from "../service/people/index.ts";
import { NOTICE_SINK } from "../service/records/index.ts";
import { noticeSink } from "../slack/notice-sink.ts";
import type { Database } from "../store/db.ts";
import { isDatabaseUnreachable } from "../store/database-errors.ts";
import { createApp } from "./app.ts";
import { slackSignIn } from "../service/sign-in/index.ts";
import { OIDC_START_PATH } from "../web/oidc-routes.tsx";
import { claimDataDir } from "./data-dir-lock.ts";
import { every, outageAwareReport } from "../util/every.ts";
import { resolveGrantKey } from "./grant-key.ts";
import { listenStartupError, StartupError } from "../util/startup-errors.ts";
import { openMigrated } from "../store/open-migrated.ts";
import type { SigningKey } from "../grant/keys.ts";
import { closableServer, Drain } from "../http/drain.ts";

/** `shutdownSeconds` when a config built in code leaves it out, as countersign.yml's default. */
export const DEFAULT_SHUTDOWN_SECONDS = 10;
/** Of `shutdownSeconds`, what requests may not use: the loops, the Slack decisions already acknowledged and the database stop after them. */
const AFTER_REQUESTS_MS = 2000;

export interface RunServerOptions {
  config: Config;
  logger: Logger;
  /** An already open database (tests share one); otherwise the config's is opened and closed with the server. */
  database?: Database;
  fetch?: typeof fetch;
  clock?: () => Date;
  /** Delivery for side effects, by outbox kind. Each kind here is also enqueued for every plan event. */
  outboxHandlers?: Record<string, OutboxHandler>;
  /** The grant signing key; otherwise resolved from the config (see resolveGrantKey). */
  grantKey?: SigningKey;
  sweepMs?: number;
  deliverMs?: number;
  remindMs?: number;
  /** How often the audit log is sealed (seal-audit.ts); the seals are the log's head. */
  sealMs?: number;
  /** How often the target watcher looks for due reads (watch-targets.ts); each resource is still read once per its interval. */
  watchMs?: number;
  /** How often this replica looks whether any executor is connected (missing-executors.ts; default 2 s). */
  executorWatchMs?: number;
  /** How often people's display names that pages asked for are fetched from Slack (refresh-names.ts; default 1 s). */
  namesMs?: number;
  /** How often the retention sweep runs (retention.ts; default a minute). */
  retentionMs?: number;
  /** Retry policy of the outbox (tests shorten it). */
  delivery?: DeliveryPolicy;
  /** The interface to listen on; otherwise the config's `host` (env HOST). */
  hostname?: string;
}

export interface RunningServer {
  url: string;
  port: number;
  ctx: ServiceContext;
  /**
   * Stops as a replica should on SIGTERM: `/readyz` turns false first, long-polls answer at once
   * with what they have (a claim with 204), live streams end, no connection is accepted, and the
   * other requests finish (those still running near the end of `shutdownSeconds` are cut); then
   * the background loops and the database stop.
   */
  close(): Promise<void>;
}

/** `countersign serve`: migrate, then the HTTP server, the expiry sweeper and the outbox worker. */
export async function runServer(options: RunServerOptions): Promise<RunningServer> {
  const { config, logger } = options;
  const dataDirClaim = !options.database && config.database.kind === "pglite" ? claimDataDir(config.database.dataDir) : undefined;
  const ownsDatabase = !options.database;
  let database: Database | undefined;
  let pauseWatch: PauseWatch | undefined;
  let readers: TargetReaders | undefined;
  try {
    // Before the database is touched: a server that cannot sign grants must not migrate anything first.
    const grantKey = options.grantKey ?? (await resolveGrantKey(config)).key;
    const sealSigning = await auditSealing(config, grantKey);
    database = options.database ?? (await openMigrated(config.database));
    if (options.database) await database.migrate();
    const signals = new ListeningPlanSignals(database);
    await signals.start();
    // What this replica shows about the kill switch (banner, held plans); claims read the table itself.
    const pause = (pauseWatch = new PauseWatch(database));
    await pause.start();
    const slackEnabled = config.slack.enabled;
    const http = createReadOnlyHttp(options.fetch);
    // One reader per target, read credential only, for as long as the server runs.
    const targets = (readers = openTargetReaders(config.targets, defaultRegistry({ http })));
    const ctx: ServiceContext = {
      database,
      config,
      http,
      targets,
      clock: options.clock ?? (() => new Date()),
      logger,
      signals,
      pause,
      sinks: [...Object.keys(options.outboxHandlers ?? {}), "webhook", ...(slackEnabled ? ["slack", HOME_SINK] : [])],
      grantKey,
      redaction: redactionRules(config.redact.fields),
    };
    const loginLink = config.browser.loginLinks ? (userId: string) => createLoginLink(ctx, { userId, via: "slack" }).then((l) => l.url) : undefined;
    const slack = config.slack.enabled ? await openSlackDoor(ctx, config.slack, config, logger, loginLink ? { loginLink } : {}) : undefined;
    ctx.directory = slack?.directory;
    ctx.people = slack?.people;
    ctx.profiles = slack?.profiles;
    if (!slack) logger.info("Slack is not configured (no SLACK_BOT_TOKEN): running browser-only");
    if (!config.executorToken && config.executor.expected !== false)
      logger.warn(
        "COUNTERSIGN_EXECUTOR_TOKEN is not set: the executor API refuses every executor, so approved plans are never applied; set the same long secret here and on each executor",
      );
    // Aborted as the server stops: a Home delivery waiting out its spacing publishes at once.
    const stopping = new AbortController();
    const handlers: Record<string, OutboxHandler> = {
      ...options.outboxHandlers,
      webhook: webhookSink(ctx),
      ...sealHandlers(ctx, config, sealSigning),
      ...(slack && config.slack.enabled
        ? {
            slack: slack.deliver,
            [HOME_SINK]: homeSink(ctx, deliveryClient(config.slack.botToken, config.slack.apiUrl), { signal: stopping.signal }),
            [NOTICE_SINK]: noticeSink(ctx, deliveryClient(config.slack.botToken, config.slack.apiUrl)),
          }
        : {}),
    };

    const oidc = config.browser.oidc && { ...config.browser.oidc, teamId: config.browser.oidc.teamId ?? slack?.teamId ?? "" };
    if (oidc && !oidc.teamId)
      throw new StartupError(
        "browser.oidc.teamId",
        "is not set, and Slack's auth.test named no team to default to; set the team id (T…) whose people may sign in",
      );
    const drain = new Drain();
    const app = createApp(ctx, {
      drain,
      ...(slack?.handle ? { slackHandler: slack.handle } : {}),
      ...(dataDirClaim ? { adminToken: dataDirClaim.adminToken } : {}),
      ...(config.executorToken ? { executorToken: config.executorToken } : {}),
      loginLinks: config.browser.loginLinks,
      metricsToken: config.metricsToken,
      ...(oidc ? { oidc: slackSignIn(ctx, { ...oidc, redirectUri: `${config.publicUrl}${OIDC_START_PATH}/callback` }) } : {}),
    });
    const hostname = options.hostname ?? config.host;
    const server = await listen(app.fetch, config.port, hostname);
    const answers = closableServer(server as Server);
    const port = (server.address() as AddressInfo).port;
    const url = `http://${localAddressOf(hostname)}:${port}`;
    dataDirClaim?.publish(url);

    const report = (what: string) => outageAwareReport(what, isDatabaseUnreachable, logger);
    const sweeper = every(options.sweepMs ?? 1000, () => expireDue(ctx), report("expiry sweep"));
    const reminders = every(options.remindMs ?? 5000, () => remindDue(ctx), report("reminders"));
    // Sealing, then (with COUNTERSIGN_AUDIT_SEAL_KEY) signing the newest seal when one is due and queueing its publication.
    const sealer = every(
      options.sealMs ?? 2000,
      async () => {
        await sealAudit(ctx);
        if (sealSigning) await signSeals(ctx, sealSigning);
      },
      report("audit sealing"),
    );
    // Open plans' targets re-read while they wait; replicas share the reads through the database.
    const replica = `${machineName()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const watcher = every(options.watchMs ?? 1000, () => watchTargets(ctx, { replica }), report("target watch"));
    // While no executor is connected: the review channels are told once per outage, each approved plan's thread once.
    const executorWatch = every(options.executorWatchMs ?? 2000, watchExecutors(ctx), report("executor watch"));
    // Names the pages asked for, fetched from Slack here and never while a page waits.
    const names = every(options.namesMs ?? 1000, () => refreshNames(ctx), report("names refresh"));
    // Sums sealed audit events into metrics_rollup in short steps, so a scrape reads only the newest.
    const metricsRollup = every(options.sealMs ?? 2000, () => rollUpMetrics(ctx, { maxSteps: 20 }), report("metrics rollup"));
    const retention = every(
      options.retentionMs ?? 60_000,
      () => sweepRetention(ctx, { policy: config.retention ?? DEFAULT_RETENTION, ...(sealSigning ? { signing: sealSigning } : {}) }),
      report("retention sweep"),
    );
    // Lanes (slack:<channel>, webhook:<agent>, …) drain in parallel, a bounded number at once.
    const delivery = startOutboxWorker(ctx, {
      handlers,
      policy: options.delivery ?? DEFAULT_DELIVERY,
      intervalMs: options.deliverMs ?? 250,
      report: report("outbox delivery"),
      onDead: (dead) => logger.error(dead, "a side effect failed for good and was dead-lettered"),
    });

    logger.info(
      { url, publicUrl: config.publicUrl, database: database.kind, environment: config.environment, targets: Object.keys(config.targets) },
      "countersign serving",
    );
    return {
      url,
      port,
      ctx,
      async close() {
        const shutdownMs = (config.shutdownSeconds ?? DEFAULT_SHUTDOWN_SECONDS) * 1000;
        drain.begin();
        logger.info("stopping: not ready, long-polls and live streams answered, letting requests finish");
        const cut = await answers.close(Math.max(shutdownMs - AFTER_REQUESTS_MS, shutdownMs / 2));
        if (cut > 0) logger.warn({ cut }, "requests still running near the end of shutdownSeconds were cut off");
        stopping.abort();
        await Promise.all([
          sweeper.stop(),
          delivery.stop(),
          reminders.stop(),
          sealer.stop(),
          watcher.stop(),
          retention.stop(),
          metricsRollup.stop(),
          executorWatch.stop(),
          names.stop(),
        ]);
        await slack?.stop();
        await signals.stop();
        await pause.stop();
        await targets.close();
        if (ownsDatabase) await database!.close();
        dataDirClaim?.release();
      },
    };
  } catch (err) {
    await pauseWatch?.stop().catch(() => undefined); // its 1 s re-read must not outlive a server that never started
    await readers?.close();
    if (ownsDatabase) await database?.close();
    dataDirClaim?.release();
    throw err;
  }
}

function listen(fetch: (req: Request) => Response | Promise<Response>, port: number, hostname: string): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port, hostname }, () => resolve(server as never));
    server.once("error", (err) => reject(listenStartupError(err, port, hostname) ?? err));
  });
}

/** How a process on this machine reaches a server listening on `hostname` (the wildcard addresses via loopback). */
function localAddressOf(hostname: string): string {
  if (hostname === "0.0.0.0" || hostname === "::") return "127.0.0.1";
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}
