import { Hono } from "hono";
import { CLAIM_KID_PARAM, ClaimKids, EXECUTOR_ID_HEADER, ExecutorId, MAX_CLAIM_WAIT_SECONDS } from "../contract/executor-api.ts";
import { claimApprovedWaiting, grantKeys } from "../service/execution/index.ts";
import type { ServiceContext } from "../service/context.ts";
import { ServiceError } from "../service/errors.ts";
import { heartbeatClaim, leaseLost } from "../service/execution/index.ts";
import { reportOutcome } from "../service/execution/index.ts";
import { answerNow } from "../http/answer-now.ts";
import { waitUnlessDraining } from "../http/drain.ts";
import { bearerMatches } from "../util/bearer.ts";
import { readJsonBody } from "../http/json-body.ts";

/** An outcome carries up to 200 changed fields per action, so it may be larger than a plan request. */
const MAX_OUTCOME_BYTES = 8 * 1024 * 1024;

/** `/v1/executor`: where executors check the grant keys, claim approved plans, keep their lease, and report. */
export function executorApi(ctx: ServiceContext, token: string | undefined): Hono<{ Variables: { executor: string | undefined } }> {
  const api = new Hono<{ Variables: { executor: string | undefined } }>();
  api.use("*", async (c, next) => {
    if (!token) throw new ServiceError("unauthorized", "the executor API is off: set COUNTERSIGN_EXECUTOR_TOKEN on the server and the executor");
    if (!bearerMatches(c.req.header("authorization"), token)) throw new ServiceError("unauthorized", "wrong executor token (COUNTERSIGN_EXECUTOR_TOKEN)");
    const id = c.req.header(EXECUTOR_ID_HEADER);
    const executor = id === undefined ? undefined : ExecutorId.safeParse(id);
    if (executor && !executor.success) throw new ServiceError("invalid_request", `${EXECUTOR_ID_HEADER}: ${executor.error.issues[0]!.message}`);
    c.set("executor", executor?.data);
    await next();
  });

  // Tokens are 24 random bytes in base64url; anything else was never issued, and is answered
  // before the database is asked (a NUL in it would otherwise fail inside PostgreSQL).
  api.use("/claims/:claimToken/*", async (c, next) => {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(c.req.param("claimToken") ?? "")) throw leaseLost();
    await next();
  });

  api.post("/claim", async (c) => {
    const raw = c.req.query("wait") ?? String(MAX_CLAIM_WAIT_SECONDS);
    const seconds = Number(raw);
    if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_CLAIM_WAIT_SECONDS) {
      throw new ServiceError("invalid_request", `wait must be 0 to ${MAX_CLAIM_WAIT_SECONDS} seconds, got '${raw}'`);
    }
    const kids = ClaimKids.safeParse(c.req.queries(CLAIM_KID_PARAM) ?? []);
    if (!kids.success) {
      const issue = kids.error.issues[0]!;
      throw new ServiceError("invalid_request", `${CLAIM_KID_PARAM}${issue.path.length > 0 ? `[${issue.path.join(".")}]` : ""}: ${issue.message}`);
    }
    const claim = await waitUnlessDraining(c, (signal) =>
      claimApprovedWaiting(ctx, { waitMs: seconds * 1000, signal, kids: kids.data, executor: c.get("executor") }),
    );
    // The claim is written at once: the approval's click waits on the executor's next step.
    return claim ? answerNow(c, claim) : c.body(null, 204);
  });

  api.get("/keys", (c) => c.json(grantKeys(ctx)));

  api.post("/claims/:claimToken/heartbeat", async (c) =>
    c.json(await heartbeatClaim(ctx, { claimToken: c.req.param("claimToken"), executor: c.get("executor") })),
  );

  api.post("/claims/:claimToken/report", async (c) => {
    const body = await readJsonBody(c.req.raw, { what: "the outcome", maxBytes: MAX_OUTCOME_BYTES });
    return c.json(await reportOutcome(ctx, { claimToken: c.req.param("claimToken"), outcome: body, executor: c.get("executor") }));
  });
  return api;
}
