import { Hono } from "hono";
import { z } from "zod";
import { SlackUserId } from "../plan/schema.ts";
import { whyUnstorableText } from "../plan/storable.ts";
import { addAgent } from "../service/add-agent.ts";
import { ServiceError } from "../service/errors.ts";
import { listAgents } from "../service/list-agents.ts";
import { revokeAgent } from "../service/revoke-agent.ts";
import { validate } from "../service/validate.ts";
import { verifyAudit } from "../service/verify-audit.ts";
import type { ServiceContext } from "../service/context.ts";
import { bearerMatches } from "./bearer.ts";
import { readJsonBody } from "./json-body.ts";

const ADMIN_BODY_BYTES = 16 * 1024;
const NewAgent = z.strictObject({ name: z.string().min(1).max(100) });
const NewLoginLink = z.strictObject({ userId: SlackUserId, name: z.string().max(200).optional() });

/**
 * `/admin`: how the CLI reaches a running server that owns an embedded (PGlite) data dir,
 * which only one process may open. Authenticated by a random token the server writes, readable
 * only by its owner, into the data dir.
 */
export function adminApi(ctx: Pick<ServiceContext, "database" | "clock">, adminToken: string, loginLink?: (userId: string, name: string | undefined) => Promise<{ url: string; expiresAt: string }>): Hono {
  const admin = new Hono();
  admin.use("*", async (c, next) => {
    if (!bearerMatches(c.req.header("authorization"), adminToken)) {
      throw new ServiceError("unauthorized", "the admin token is wrong; the CLI reads it from the data dir");
    }
    await next();
  });
  admin.post("/agents", async (c) => {
    const { name } = validate(NewAgent, await readJsonBody(c.req.raw, { what: "the agent", maxBytes: ADMIN_BODY_BYTES }), "the agent");
    return c.json(await addAgent(ctx, { name }), 201);
  });
  admin.get("/agents", async (c) => c.json({ agents: await listAgents(ctx) }));
  admin.post("/agents/:name/revoke", async (c) => {
    const why = whyUnstorableText(c.req.param("name"));
    if (why) throw new ServiceError("invalid_request", `the agent name ${why}`, { issues: [{ path: "/name", message: why }] });
    await revokeAgent(ctx, { name: c.req.param("name") });
    return c.json({ revoked: c.req.param("name") });
  });
  admin.get("/audit/verify", async (c) => c.json(await verifyAudit(ctx)));
  admin.post("/login-links", async (c) => {
    if (!loginLink) throw new ServiceError("invalid_request", "sign-in links are switched off in this Countersign's config (browser.loginLinks)");
    const { userId, name } = validate(NewLoginLink, await readJsonBody(c.req.raw, { what: "the sign-in link request", maxBytes: ADMIN_BODY_BYTES }), "the sign-in link request");
    return c.json(await loginLink(userId, name), 201);
  });
  return admin;
}
