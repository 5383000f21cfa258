import type { ContentfulStatusCode } from "hono/utils/http-status";

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
  /** An Approve re-read the plan's targets and found them changed since the preview: nothing recorded, the plan is stale. */
  | "target_changed"
  /** The plan's recorded policy (`edits: false`) keeps reviewers from editing its values. */
  | "not_editable"
  /** A batch of alike plans was decided on more than ten minutes after it was opened: nothing decided. */
  | "batch_expired"
  /** An undo was asked of a plan that wrote nothing to take back, or was taken back already (`details.status`). */
  | "not_undoable"
  /** An undo of this plan is waiting for a decision or the executor already (`details.planId`). */
  | "undo_open"
  /** An action of the undo cannot be proposed: its targets' `allow` rules or its preview refuse it (`issues` per action). */
  | "undo_refused"
  /** Someone changed the target since the plan was applied, over the fields it changed: undoing it would overwrite that. */
  | "undo_target_changed"
  /** The delegation a person acted through ended (its day passed, or it was ended early) before their click was recorded. */
  | "delegation_ended";

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
  not_undoable: 409,
  undo_open: 409,
  undo_target_changed: 409,
  delegation_ended: 409,
  batch_expired: 410,
  self_approval: 403,
  not_an_approver: 403,
  not_a_reader: 403,
  not_a_revoker: 403,
  not_an_admin: 403,
  not_editable: 403,
  not_revocable: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_target: 422,
  unknown_kind: 422,
  preview_failed: 422,
  policy_denied: 422,
  undo_refused: 422,
  rate_limited: 429,
};

/** What the HTTP doors answer while the database is unreachable: retry shortly, nothing was done. */
export const DATABASE_UNAVAILABLE = {
  code: "database_unavailable",
  message: "Countersign's database is unreachable for the moment; nothing was done. Retry shortly.",
} as const;
