import { Hono } from "hono";
import { addAgent } from "../service/add-agent.ts";
import { ServiceError } from "../service/errors.ts";
import { listAgents } from "../service/list-agents.ts";
import { revokeAgent } from "../service/revoke-agent.ts";
import { verifyAudit } from "../service/verify-audit.ts";
import type { Database } from "../store/db.ts";
import { bearerMatches } from "./bearer.ts";

/**
 * `/admin`: how the CLI reaches a running server that owns an embedded (PGlite) data dir,
 * which only one process may open. Authenticated by a random token the server writes, readable
 * only by its owner, into the data dir.
 */
export function adminApi(database: Database, adminToken: string, loginLink?: (userId: string, name: string | undefined) => Promise<{ url: string; expiresAt: string }>): Hono {
  const admin = new Hono();
  admin.use("*", async (c, next) => {
    if (!bearerMatches(c.req.header("authorization"), adminToken)) {
      throw new ServiceError("unauthorized", "the admin token is wrong; the CLI reads it from the data dir");
    }
    await next();
  });
  admin.post("/agents", async (c) => {
    const { name } = (await c.req.json()) as { name: string };
    return c.json(await addAgent(database, String(name)), 201);
  });
  admin.get("/agents", async (c) => c.json({ agents: await listAgents(database) }));
  admin.post("/agents/:name/revoke", async (c) => {
    await revokeAgent(database, c.req.param("name"));
    return c.json({ revoked: c.req.param("name") });
  });
  admin.get("/audit/verify", async (c) => c.json(await verifyAudit(database)));
  admin.post("/login-links", async (c) => {
    if (!loginLink) throw new ServiceError("invalid_request", "sign-in links are switched off in this Countersign's config (browser.loginLinks)");
    const { userId, name } = (await c.req.json()) as { userId: string; name?: string };
    return c.json(await loginLink(String(userId), name === undefined ? undefined : String(name)), 201);
  });
  return admin;
}
