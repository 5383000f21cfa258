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
import { proposeUndo } from "../service/undo/index.ts";

/** An undo request is two optional fields: a few hundred bytes at most. */
const UNDO_REQUEST_MAX_BYTES = 4096;

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

  // An undo of one of this agent's applied plans: a new plan, `undoes` set, pending review. The body may be left out.
  api.post("/plans/:id/undo", async (c) => {
    const empty = c.req.header("content-length") === "0" || (c.req.header("content-length") === undefined && c.req.header("transfer-encoding") === undefined);
    const request = empty ? {} : await readJsonBody(c.req.raw, { what: "the undo request", requireJsonType: true, maxBytes: UNDO_REQUEST_MAX_BYTES });
    const { created, plan } = await proposeUndo(ctx, { planId: c.req.param("id"), asker: { agent: c.get("agent") }, request });
    noteOnRequestLine(c, { planId: plan.id, undoes: c.req.param("id"), created });
    return c.json(plan, created ? 201 : 200);
  });

  api.get("/plans/:id/events", async (c) => c.json({ events: await listPlanEvents(ctx, { agent: c.get("agent"), planId: c.req.param("id") }) }));

  return api;
}
