import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { ReadUsage } from "../service/agents/index.ts";
import { authenticateAgent, authenticateAgentForSubmit, type AgentIdentity } from "../service/agents/index.ts";
import { cancelPlan } from "../service/intake/index.ts";
import type { ServiceContext } from "../service/context.ts";
import { ServiceError } from "../service/errors.ts";
import { getPlan } from "../service/intake/index.ts";
import { listPlanEvents } from "../service/intake/index.ts";
import { submitPlan } from "../service/intake/index.ts";
import { MAX_WAIT_SECONDS, waitForPlan } from "../service/intake/index.ts";
import { readJsonBody } from "../http/json-body.ts";
import { openApiDocument } from "./openapi.ts";
import { noteOnRequestLine } from "../http/request-id.ts";
import { waitUnlessDraining } from "../http/drain.ts";

type Env = { Variables: { agent: AgentIdentity; usage: ReadUsage | undefined } };

/** `/v1`: the agent API. Each route parses, authenticates, calls one service verb. */
export function agentApi(ctx: ServiceContext): Hono<Env> {
  const api = new Hono<Env>();

  const authenticate = createMiddleware<Env>(async (c, next) => {
    const authorization = c.req.header("authorization");
    if (c.req.method === "POST" && c.req.path.endsWith("/plans")) {
      // A submit: the key and the agent's usage against its limits in one statement.
      const { agent, usage } = await authenticateAgentForSubmit(ctx, { authorization });
      c.set("agent", agent);
      c.set("usage", usage);
    } else {
      c.set("agent", await authenticateAgent(ctx, { authorization }));
    }
    await next();
  });
  // "/plans/*" matches "/plans" itself too: registering both ran the key lookup twice per submit.
  api.use("/plans/*", authenticate);

  // Public: the document describes the API, so a client can read it before it has a key.
  api.get("/openapi.json", (c) => c.json(openApiDocument(ctx.config.publicUrl)));

  api.post("/plans", async (c) => {
    const agent = c.get("agent");
    const { created, plan } = await submitPlan(ctx, {
      agent,
      usage: c.get("usage"),
      request: await readJsonBody(c.req.raw, { what: "the plan request", requireJsonType: true }),
    });
    // The submit's facts go on the request's line, so a submit costs one log line.
    noteOnRequestLine(c, { planId: plan.id, hash: plan.hash, agent: agent.name, actions: plan.plan.actions.length, created });
    return c.json(plan, created ? 201 : 200);
  });

  api.get("/plans/:id", async (c) => c.json(await getPlan(ctx, { agent: c.get("agent"), planId: c.req.param("id") })));

  api.get("/plans/:id/wait", async (c) => {
    const raw = c.req.query("timeout") ?? "30";
    const seconds = Number(raw);
    if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS) {
      throw new ServiceError("invalid_request", `timeout must be a number of seconds from 0 to ${MAX_WAIT_SECONDS}, got '${raw}'`, {
        issues: [{ path: "/timeout", message: "out of range" }],
      });
    }
    const input = { agent: c.get("agent"), planId: c.req.param("id"), timeoutMs: seconds * 1000 };
    return c.json(await waitUnlessDraining(c, (signal) => waitForPlan(ctx, { ...input, signal })));
  });

  api.post("/plans/:id/cancel", async (c) => c.json(await cancelPlan(ctx, { agent: c.get("agent"), planId: c.req.param("id") })));

  api.get("/plans/:id/events", async (c) => c.json({ events: await listPlanEvents(ctx, { agent: c.get("agent"), planId: c.req.param("id") }) }));

  return api;
}
