import type { Context } from "hono";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";
import type { ErrorBody } from "../contract/agent-api.ts";
import { ServiceError } from "../service/errors.ts";

export type { ErrorBody } from "../contract/agent-api.ts";

export function errorResponse(c: Context, err: ServiceError): Response {
  const body: ErrorBody = {
    error: {
      code: err.code,
      message: err.message,
      ...(err.issues ? { issues: err.issues } : {}),
      ...(err.details ? { details: err.details } : {}),
    },
  };
  // A refusal that passes with time (rate_limited) says when, in the header clients and proxies read.
  const retryAfter = err.details?.retryAfterSeconds;
  return c.json(body, HTTP_STATUS_OF[err.code], typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {});
}
