import { Hono, type Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ServiceContext } from "../service/context.ts";
import { ServiceError } from "../service/errors.ts";
import { adminApi } from "./admin-api.ts";
import { agentApi } from "./agent-api.ts";
import { createLoginLink } from "../service/sign-in/index.ts";
import { webRoutes } from "../web/web-routes.tsx";
import { OIDC_START_PATH } from "../web/oidc-routes.tsx";
import type { SlackSignIn } from "../service/sign-in/index.ts";
import { executorApi } from "./executor-api.ts";
import { errorResponse } from "./http-errors.ts";
import { DATABASE_UNAVAILABLE } from "../contract/error-codes.ts";
import { isDatabaseUnreachable } from "../store/database-errors.ts";
import { migrationState } from "../store/migration-state.ts";
import { countRefusal } from "../service/operations/index.ts";
import { metricsRoutes } from "./metrics.ts";
import { requestIds, requestLogger } from "../http/request-id.ts";
import { drainAware, type Drain } from "../http/drain.ts";

/** Countersign's one HTTP app: agent API, executor API, Slack's requests and the browser pages. */
export function createApp(
  ctx: ServiceContext,
  options: {
    adminToken?: string;
    executorToken?: string;
    slackHandler?: (c: Context) => Promise<Response>;
    loginLinks?: boolean;
    oidc?: SlackSignIn;
    metricsToken?: string | undefined;
    /** The server's shutdown: long-polls and live streams heed it, and readiness turns false first. */
    drain?: Drain;
  } = {},
): Hono {
  const app = new Hono();
  app.use(requestIds(ctx.logger));
  if (options.drain) app.use(drainAware(options.drain));
  app.get("/healthz", (c) => c.json({ ok: true, environment: ctx.config.environment }));
  // Liveness above (the process answers); readiness here: the database answers and is migrated,
  // and the replica is not stopping (a load balancer sends it nothing new).
  app.get("/readyz", async (c) => {
    if (options.drain?.draining) return c.json({ ok: false, reason: "shutting down" }, 503);
    const state = await migrationState(ctx.database);
    return state.ready ? c.json({ ok: true, migration: state.migration }) : c.json({ ok: false, reason: state.reason }, 503);
  });
  app.route("/", metricsRoutes(ctx, options.metricsToken));
  if (options.slackHandler) app.post("/slack/events", options.slackHandler);
  app.route("/v1/executor", executorApi(ctx, options.executorToken));
  app.route("/v1", agentApi(ctx));
  app.route("/", webRoutes(ctx, { loginLinks: options.loginLinks ?? true, oidc: options.oidc, oidcStartUrl: options.oidc ? OIDC_START_PATH : undefined }));
  if (options.adminToken) {
    const loginLink =
      options.loginLinks === false ? undefined : (userId: string, name: string | undefined) => createLoginLink(ctx, { userId, name, via: "cli" });
    app.route("/admin", adminApi(ctx, options.adminToken, loginLink));
  }

  app.notFound((c) => errorResponse(c, new ServiceError("not_found", `no route for ${c.req.method} ${c.req.path}`)));
  app.onError((err, c) => {
    if (err instanceof ServiceError) return countRefusal(ctx, { code: err.code, waitMs: 1000 }).then(() => errorResponse(c, err));
    if (err instanceof HTTPException && err.status < 500) {
      return c.json({ error: { code: "invalid_request", message: err.message || "bad request" } }, err.status);
    }
    if (isDatabaseUnreachable(err)) return c.json({ error: DATABASE_UNAVAILABLE }, 503, { "retry-after": "2" });
    requestLogger(c, ctx.logger).error({ err, method: c.req.method, path: c.req.path }, "request failed");
    return c.json({ error: { code: "internal", message: "Countersign hit an internal error; it is in the server log" } }, 500);
  });
  return app;
}
