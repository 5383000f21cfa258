import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorCode } from "../service/errors.ts";
import type { ErrorBody } from "../wire/agent-api.ts";
import { ServiceError } from "../service/errors.ts";

/** The agent API's one mapping from a refusal to an HTTP status (the OpenAPI document reads it too). */
export const HTTP_STATUS_OF: Record<ErrorCode, ContentfulStatusCode> = {
  invalid_json: 400,
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  idempotency_conflict: 409,
  conflict: 409,
  lease_lost: 409,
  approver_check_failed: 503,
  already_decided: 409,
  already_voted: 409,
  hash_mismatch: 409,
  plan_expired: 409,
  not_supersedable: 409,
  target_changed: 409,
  self_approval: 403,
  not_an_approver: 403,
  not_a_reader: 403,
  not_a_revoker: 403,
  not_an_admin: 403,
  not_revocable: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_target: 422,
  unknown_kind: 422,
  preview_failed: 422,
  policy_denied: 422,
  rate_limited: 429,
};

export type { ErrorBody } from "../wire/agent-api.ts";

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
