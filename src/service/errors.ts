/**
 * Every refusal Countersign can give, with a stable code. Each door (agent API, Slack,
 * browser) maps these to its own form in exactly one place.
 */
export type ErrorCode =
  | "invalid_json"
  | "invalid_request"
  | "unauthorized"
  | "not_found"
  | "idempotency_conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "unknown_target"
  /** An action's `kind` names no adapter this server has. */
  | "unknown_kind"
  | "preview_failed"
  | "policy_denied"
  | "plan_expired"
  | "already_decided"
  | "hash_mismatch"
  | "self_approval"
  | "not_an_approver"
  | "already_voted"
  | "not_a_reader"
  | "not_revocable"
  | "not_a_revoker"
  | "not_an_admin"
  | "lease_lost"
  | "approver_check_failed"
  | "rate_limited"
  | "conflict"
  /** A re-plan named a plan that can no longer be replaced (final, claimed, or already superseded). */
  | "not_supersedable"
  /** An Approve re-read the plan's targets and found them changed since the preview: nothing recorded, the plan is stale (issue 15). */
  | "target_changed";

export interface Issue {
  /** JSON Pointer into the request, "" for the whole of it. */
  path: string;
  message: string;
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly issues: Issue[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message: string, extra: { issues?: Issue[]; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.issues = extra.issues;
    this.details = extra.details;
  }
}

export function isServiceError(err: unknown, code?: ErrorCode): err is ServiceError {
  return err instanceof ServiceError && (code === undefined || err.code === code);
}
