/**
 * The agent API's wire contract, written once: every request and response body as a zod schema.
 * The server's types are inferred from these, the OpenAPI document (src/server/openapi.ts) is
 * generated from them, and so are the client's dependency-free types (`npm run gen:wire` →
 * src/client/wire-types.ts). Change a body here and nowhere else.
 */
import { z } from "zod";
import type { Change as DomainChange } from "../plan/changes.ts";
import { SHA256_PATTERN } from "../plan/fingerprint.ts";
import { ActionOutcome, Outcome } from "../plan/outcome.ts";
import { PostgresRowAction, PostgresRowPlanned } from "../plan/postgres-row-schema.ts";
import {
  AppliedPolicy,
  HttpJsonAction,
  HttpJsonPlanned,
  PersonAct,
  PLAN_STATUSES,
  PlanDocument,
  PlannedAction,
  PlanRequest,
  Precondition,
} from "../plan/schema.ts";
import { HTTP_STATUS_OF } from "./error-codes.ts";
import type { ErrorCode as ServiceErrorCode } from "./error-codes.ts";
import { DATABASE_UNAVAILABLE } from "./error-codes.ts";

export {
  ActionOutcome,
  AppliedPolicy,
  HttpJsonAction,
  HttpJsonPlanned,
  Outcome,
  PlanDocument,
  PlannedAction,
  PlanRequest,
  PostgresRowAction,
  PostgresRowPlanned,
  Precondition,
};

/** The one JSON-value schema of src/plan/schema.ts (`z.json()`), shared by every body and state. */
export const JsonValue = HttpJsonPlanned.shape.body.unwrap();
export type JsonValue = z.output<typeof JsonValue>;
const IsoDateTime = z.iso.datetime();
const Via = z.enum(["slack", "web"]);

export const Change = z.strictObject({
  path: z.string().describe('JSON Pointer to the field inside the resource; "" for the whole resource'),
  from: JsonValue.optional().describe("The value before; absent when the field did not exist"),
  to: JsonValue.optional().describe("The value after; absent when the field is removed"),
});
export type Change = z.output<typeof Change>;

/** What the preview shows a reviewer for one action; not hashed itself, but its digests are. */
export const ActionPreview = z.strictObject({
  target: z.string(),
  path: z.string(),
  op: z
    .string()
    .describe("The action's op in its adapter's terms: `merge`, `replace`, `create`, `delete` (http.json); `update`, `insert`, `delete` (postgres.row)"),
  before: JsonValue.nullable().describe(
    "The resource as the preview read it (for postgres.row, the row's columns); null when nothing exists yet (`create`, `insert`)",
  ),
  after: JsonValue.nullable().describe("The resource as it will be once applied; null for `delete`"),
  version: z
    .string()
    .nullable()
    .describe(
      "The version read at preview time (an ETag, or a postgres.row version column or xmin, as text); null when nothing exists or the target gives none",
    ),
  changes: z.array(Change).describe("Field-by-field difference between `before` and `after`, as reviewers see it"),
  precondition: z
    .string()
    .optional()
    .describe(
      "How the executor detects a change since the preview: `etag` (If-Match), `digest` (re-read and compare; weaker), `version` (a version column), `xmin` (the row's xmin; weaker across dump and restore) or `absent` (nothing may exist yet)",
    ),
});
export type ActionPreview = z.output<typeof ActionPreview>;

/** The person a decider acted for through a delegation, when not for themselves. */
const ActedFor = z
  .string()
  .optional()
  .describe("Present when the person acted for someone away who delegated their approvals to them: that person's Slack user id");

export const Approval = z.strictObject({
  userId: z.string(),
  via: Via,
  at: IsoDateTime,
  for: ActedFor,
  recheckFailed: z
    .string()
    .optional()
    .describe(
      'Present when the targets could not be re-read at this Approve: recorded anyway, "could not re-check", and why; the executor\'s revalidation remains the final gate',
    ),
});
export type Approval = z.output<typeof Approval>;

export const Rejection = z.strictObject({ userId: z.string(), via: Via, reason: z.string(), at: IsoDateTime, for: ActedFor });
export type Rejection = z.output<typeof Rejection>;

/** Who withdrew the approval of a plan no executor had taken yet, and why. */
export const Revocation = z.strictObject({ userId: z.string(), via: Via, reason: z.string(), at: IsoDateTime, for: ActedFor });
export type Revocation = z.output<typeof Revocation>;

/**
 * Why an approved plan is not being applied now: Countersign is paused (its kill switch), the
 * executors asking for work cannot verify its grant (their public key is not the server's), or no
 * executor is connected at all. Since when, and why.
 */
export const Hold = z.discriminatedUnion("by", [
  z.strictObject({
    by: z.literal("pause"),
    reason: z.string(),
    since: IsoDateTime,
  }),
  z.strictObject({
    by: z.literal("grant_key_mismatch"),
    reason: z.string(),
    since: IsoDateTime,
    grantKid: z.string().describe("The id of the key that signed this plan's grant (the server's COUNTERSIGN_GRANT_PRIVATE_KEY)"),
    executorKids: z.array(z.string()).describe("The key ids the executors asking for work can verify (their COUNTERSIGN_GRANT_PUBLIC_KEY)"),
  }),
  z.strictObject({
    by: z.literal("no_executor"),
    reason: z.string(),
    since: IsoDateTime.describe("The later of the approval and the last time an executor was seen"),
    lastSeenAt: IsoDateTime.nullable().describe(
      "When an executor last asked for work, kept a lease or reported; null when none has yet. None has for longer than `executor.missingAfterSeconds`",
    ),
  }),
]);
export type Hold = z.output<typeof Hold>;

export const PlanStatus = z.enum(PLAN_STATUSES).describe("`pending` awaits approval; `approved` and `executing` await the executor; the rest are final");
export type PlanStatus = z.output<typeof PlanStatus>;

/** The server's re-reads of an open plan's targets (`targets.<name>.watch`). */
export const Watch = z.strictObject({
  checkedAt: IsoDateTime.nullable().describe("The oldest of the plan's resources' last good re-read; null before the first"),
  failingSince: IsoDateTime.nullable().describe(
    "Since when a re-read of one of its resources has failed (target down, 5xx, timeout); null while they answer. The plan stays open: the executor re-checks before writing",
  ),
});
export type Watch = z.output<typeof Watch>;

/** Another version of the same intent (re-plan, `supersedes`): which plan, its hash, where people review it. */
export const VersionLink = z.strictObject({
  id: z.uuid(),
  hash: z.string().regex(SHA256_PATTERN),
  reviewUrl: z.url(),
  editedBy: PersonAct.optional().describe(
    "On `supersededBy`: the reviewer whose edit of this plan's values made that version (it is still your plan: `GET /v1/plans/{id}` answers you, and its outcome is the one that counts)",
  ),
});
export type VersionLink = z.output<typeof VersionLink>;

/** How a plan is shown to the agent that submitted it (and, redacted, to reviewers): the API's one representation of a plan. */
export const PlanView = z.strictObject({
  id: z.uuid(),
  hash: z.string().regex(SHA256_PATTERN).describe("JCS SHA-256 of `plan`; every approval and grant binds to it"),
  status: PlanStatus,
  expiresAt: IsoDateTime,
  reviewUrl: z.url().describe("Where people review the plan"),
  createdAt: IsoDateTime,
  plan: PlanDocument,
  preview: z.strictObject({ actions: z.array(ActionPreview) }),
  approvals: z.array(Approval),
  rejection: Rejection.optional().describe("Present once the plan is rejected"),
  revocation: Revocation.optional().describe("Present once the plan is revoked: who withdrew the approval and why"),
  watch: Watch.optional().describe("Present while a pending or approved plan's targets are watched: when they were last re-read, and since when re-reads fail"),
  held: Hold.optional().describe(
    "Present while an approved plan waits because Countersign is paused, because the executors asking for work cannot verify its grant (`grant_key_mismatch`), or because no executor is connected (`no_executor`); its grant keeps running out meanwhile",
  ),
  grantExpiresAt: IsoDateTime.optional().describe("When the approval stops being usable by an executor (set once approved)"),
  outcome: Outcome.optional().describe("What the executor reported, with per-action detail"),
  supersedes: VersionLink.optional().describe("The earlier version this plan replaces (it was submitted with `supersedes`)"),
  supersededBy: VersionLink.optional().describe("The newer version that replaced this plan: it is `superseded`, or stays `stale` and points at it"),
  undoes: VersionLink.optional().describe("An undo: the applied plan it takes back (its document's `undoes`)"),
  undoneBy: VersionLink.optional().describe("The undo that took this plan back, once that undo is applied"),
});
export type PlanView = z.output<typeof PlanView>;

/** What an agent sends to `POST /v1/plans/{id}/undo`; every field may be left out. */
export const UndoRequest = z.strictObject({
  idempotencyKey: PlanRequest.shape.idempotencyKey.describe(
    "A retry with the same key answers with the undo made the first time (200) instead of asking again",
  ),
  ttlSeconds: PlanRequest.shape.ttlSeconds.describe("Seconds reviewers have to decide the undo; omit for its targets' default"),
});
export type UndoRequest = z.output<typeof UndoRequest>;

export const Actor = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("agent"), agentId: z.string(), name: z.string() }),
  z.strictObject({ type: z.literal("user"), userId: z.string(), via: Via, for: ActedFor }),
  z.strictObject({ type: z.literal("system"), process: z.string() }),
]);
export type Actor = z.output<typeof Actor>;

export const AuditEvent = z.strictObject({
  id: z.int().min(1),
  type: z.string().describe("For example `plan.submitted`, `decision.approve`, `plan.approved`"),
  actor: Actor,
  data: z.record(z.string(), z.unknown()),
  at: IsoDateTime,
  hash: z.string().regex(SHA256_PATTERN).describe("This event's link in the hash-chained audit log"),
});
export type AuditEvent = z.output<typeof AuditEvent>;

export const PlanEvents = z.strictObject({ events: z.array(AuditEvent).describe("Oldest first") });
export type PlanEvents = z.output<typeof PlanEvents>;

/**
 * Every code an HTTP answer can carry: the service's refusals (by the server's own status
 * table), `database_unavailable` (503 while the database cannot be reached) and `internal` (500).
 */
type AnswerCode = ServiceErrorCode | typeof DATABASE_UNAVAILABLE.code | "internal";
const answerCodes: AnswerCode[] = [...(Object.keys(HTTP_STATUS_OF) as ServiceErrorCode[]), DATABASE_UNAVAILABLE.code, "internal"];
export const ERROR_CODES = answerCodes as [AnswerCode, ...AnswerCode[]];
export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = z.output<typeof ErrorCode>;

export const Issue = z.strictObject({
  path: z.string().describe('JSON Pointer into the request; "" for the whole of it'),
  message: z.string(),
});
export type Issue = z.output<typeof Issue>;

export const ErrorBody = z.strictObject({
  error: z.strictObject({
    code: ErrorCode,
    message: z.string().describe("A sentence for the agent (or its developer) saying what to change"),
    issues: z.array(Issue).optional().describe("Each offending place in the request, for `invalid_request` and some 422s"),
    details: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "Machine-readable context: `planId` for `idempotency_conflict`, `status` for `already_decided`, `expiresAt` for `plan_expired`, `target`/`path`/`targetAnswer` for `preview_failed`, `limit` (the config key)/`value`/`retryAfterSeconds` for `rate_limited` (429, also sent as `Retry-After`)",
      ),
  }),
});
export type ErrorBody = z.output<typeof ErrorBody>;

/** What a plan's callback URL receives on every status change, signed (`Countersign-Signature`). */
export const WebhookPayload = z.strictObject({
  planId: z.uuid(),
  hash: z.string().regex(SHA256_PATTERN),
  status: PlanStatus.describe("The status the plan just moved to"),
  approvals: z.array(Approval),
  reason: z.string().optional().describe("Why it was rejected or revoked, or why it did not apply"),
  outcome: Outcome.optional().describe("The executor's report, once the plan is applied, stale, failed or expired after approval"),
  supersededBy: VersionLink.optional().describe(
    "Once the plan is superseded: the version that replaced it, with `editedBy` when a reviewer's edit made it (that version's own status changes follow to the same callback URL)",
  ),
});
export type WebhookPayload = z.output<typeof WebhookPayload>;

/** Named components of the contract, in the order they are listed. Request bodies are described as input. */
export const REQUEST_COMPONENTS = { PlanRequest, UndoRequest, HttpJsonAction, PostgresRowAction, JsonValue } as const;
export const RESPONSE_COMPONENTS = {
  PlanView,
  PlanStatus,
  VersionLink,
  PlanDocument,
  PersonAct,
  PlannedAction,
  HttpJsonPlanned,
  PostgresRowPlanned,
  Precondition,
  AppliedPolicy,
  ActionPreview,
  Change,
  Approval,
  Rejection,
  Revocation,
  Hold,
  Outcome,
  ActionOutcome,
  PlanEvents,
  AuditEvent,
  Actor,
  ErrorBody,
  ErrorCode,
  Issue,
  WebhookPayload,
  JsonValue,
} as const;

// The domain keeps its own types for what the pure core computes (a diff); tsc
// fails here when the wire and the domain drift apart. (Identity, not mutual assignability,
// which would miss a dropped optional field.)
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const drift: [Same<keyof Change, keyof DomainChange>, Same<Change["path"], DomainChange["path"]>] = [true, true];
void drift;
