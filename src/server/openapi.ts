import { isDeepStrictEqual } from "node:util";
import { HTTP_STATUS_OF } from "./http-errors.ts";
import { z } from "zod";
import pkg from "../../package.json" with { type: "json" };
import { SHA256_PATTERN } from "../plan/fingerprint.ts";
import { ActionOutcome, Outcome } from "../plan/outcome.ts";
import {
  AppliedPolicy,
  HttpJsonAction,
  LIMITS,
  OPS,
  PLAN_STATUSES,
  PlanDocument,
  PlannedAction,
  PlanRequest,
  Precondition,
  type ActionPreview,
} from "../plan/schema.ts";
import type { Actor } from "../service/audit.ts";
import type { ErrorCode } from "../service/errors.ts";
import type { AuditEventView } from "../service/list-events.ts";
import type { PlanView } from "../service/plan-view.ts";
import { MAX_WAIT_SECONDS } from "../service/wait-for-plan.ts";
import type { ErrorBody } from "./http-errors.ts";

/*
 * The OpenAPI 3.1 document of the agent API (`/v1`, without the executor's routes). Request
 * schemas are generated from the zod schemas the server parses with; response schemas from the
 * zod schemas below, which are checked against the TypeScript types the server returns.
 */

/** The one JSON-value schema of src/plan/schema.ts (`z.json()`), shared by every body and state. */
const JsonValue = PlannedAction.shape.body.unwrap();
const IsoDateTime = z.iso.datetime();
const Via = z.enum(["slack", "web"]);

export const ChangeSchema = z.strictObject({
  path: z.string().describe("JSON Pointer to the field inside the resource; \"\" for the whole resource"),
  from: JsonValue.optional().describe("The value before; absent when the field did not exist"),
  to: JsonValue.optional().describe("The value after; absent when the field is removed"),
});

export const ActionPreviewSchema = z.strictObject({
  target: z.string(),
  path: z.string(),
  op: z.enum(OPS),
  before: JsonValue.nullable().describe("The resource as the preview read it; null for `create` (nothing there yet)"),
  after: JsonValue.nullable().describe("The resource as it will be once applied; null for `delete`"),
  version: z.string().nullable().describe("The target's ETag at preview time; null when nothing exists or the target gives none"),
  changes: z.array(ChangeSchema).describe("Field-by-field difference between `before` and `after`, as reviewers see it"),
  precondition: z.enum(["etag", "digest", "absent"]).optional().describe("How the executor detects a change since the preview; `digest` (re-read and compare) is weaker than `etag` (If-Match)"),
});

export const ApprovalSchema = z.strictObject({ userId: z.string(), via: Via, at: IsoDateTime });

export const RejectionSchema = z.strictObject({ userId: z.string(), via: Via, reason: z.string(), at: IsoDateTime });

export const PlanStatusSchema = z.enum(PLAN_STATUSES).describe(
  "`pending` awaits approval; `approved` and `executing` await the executor; the rest are final",
);

/** The server's one representation of a plan (src/service/plan-view.ts). */
export const PlanViewSchema = z.strictObject({
  id: z.uuid(),
  hash: z.string().regex(SHA256_PATTERN).describe("JCS SHA-256 of `plan`; every approval and grant binds to it"),
  status: PlanStatusSchema,
  expiresAt: IsoDateTime,
  reviewUrl: z.url().describe("Where people review the plan"),
  createdAt: IsoDateTime,
  plan: PlanDocument,
  preview: z.strictObject({ actions: z.array(ActionPreviewSchema) }),
  approvals: z.array(ApprovalSchema),
  rejection: RejectionSchema.optional().describe("Present once the plan is rejected"),
  grantExpiresAt: IsoDateTime.optional().describe("When the approval stops being usable by an executor (set once approved)"),
  outcome: Outcome.optional().describe("What the executor reported, with per-action detail"),
});

export const ActorSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("agent"), agentId: z.string(), name: z.string() }),
  z.strictObject({ type: z.literal("user"), userId: z.string(), via: Via }),
  z.strictObject({ type: z.literal("system"), process: z.string() }),
]);

export const AuditEventSchema = z.strictObject({
  id: z.int().min(1),
  type: z.string().describe("For example `plan.submitted`, `decision.approve`, `plan.approved`"),
  actor: ActorSchema,
  data: z.record(z.string(), z.unknown()),
  at: IsoDateTime,
  hash: z.string().regex(SHA256_PATTERN).describe("This event's link in the hash-chained audit log"),
});

export const PlanEventsSchema = z.strictObject({ events: z.array(AuditEventSchema).describe("Oldest first") });

/** Every code the agent API can answer with, by HTTP status (the server's own table); `internal` is the 500. */
const ERROR_STATUS = HTTP_STATUS_OF;
const ERROR_CODES = [...(Object.keys(ERROR_STATUS) as ErrorCode[]), "internal"] as const;

export const ErrorCodeSchema = z.enum(ERROR_CODES);

export const IssueSchema = z.strictObject({
  path: z.string().describe("JSON Pointer into the request; \"\" for the whole of it"),
  message: z.string(),
});

export const ErrorBodySchema = z.strictObject({
  error: z.strictObject({
    code: ErrorCodeSchema,
    message: z.string().describe("A sentence for the agent (or its developer) saying what to change"),
    issues: z.array(IssueSchema).optional().describe("Each offending place in the request, for `invalid_request` and some 422s"),
    details: z.record(z.string(), z.unknown()).optional().describe(
      "Machine-readable context: `planId` for `idempotency_conflict`, `status` for `already_decided`, `expiresAt` for `plan_expired`, `target`/`path`/`targetAnswer` for `preview_failed`",
    ),
  }),
});

// The response schemas must say exactly what the server's types say; tsc fails here when either drifts.
// (Identity, not mutual assignability, which would miss a dropped optional field.)
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const drift: [
  Same<z.output<typeof PlanViewSchema>, PlanView>,
  Same<z.output<typeof ActionPreviewSchema>, ActionPreview>,
  Same<z.output<typeof AuditEventSchema>["actor"], Actor>,
  Same<Omit<z.output<typeof AuditEventSchema>, "actor" | "data">, Omit<AuditEventView, "actor" | "data">>,
  Same<z.output<typeof ErrorBodySchema>, ErrorBody>,
] = [true, true, true, true, true];
void drift;

/** Named components, in the order they are listed. Request-side ones are converted as input. */
const REQUEST_SCHEMAS = { PlanRequest, HttpJsonAction, JsonValue } as const;
const RESPONSE_SCHEMAS = {
  PlanView: PlanViewSchema,
  PlanStatus: PlanStatusSchema,
  PlanDocument,
  PlannedAction,
  Precondition,
  AppliedPolicy,
  ActionPreview: ActionPreviewSchema,
  Change: ChangeSchema,
  Approval: ApprovalSchema,
  Rejection: RejectionSchema,
  Outcome,
  ActionOutcome,
  PlanEvents: PlanEventsSchema,
  AuditEvent: AuditEventSchema,
  Actor: ActorSchema,
  ErrorBody: ErrorBodySchema,
  ErrorCode: ErrorCodeSchema,
  Issue: IssueSchema,
  JsonValue,
} as const;

/** URL-path characters, no leading `//`: the part of the server's path check a pattern can say. */
const TARGET_PATH_PATTERN = "^/([A-Za-z0-9\\-._~!$&'()*+,;=:@%][A-Za-z0-9\\-._~!$&'()*+,;=:@%/]*)?$";

/**
 * What the zod schemas check in code (superRefine, trim) and JSON Schema can still say, or
 * at least describe. Merged into the generated schema of each zod schema named here.
 */
const REQUEST_EXTRAS = new Map<z.core.$ZodType, Record<string, unknown>>([
  [PlanRequest, {
    description:
      "A plan an agent proposes. Beyond this schema the server also refuses (400 `invalid_request`) a plan with two actions on the same target and path (merge them into one), a `ttlSeconds` above the policy's maximum, and bodies nested deeper than " +
      `${LIMITS.maxDepth} levels; the whole request may be at most ${LIMITS.maxBodyBytes / 1024} KiB (413).`,
  }],
  [PlanRequest.shape.title, { pattern: "\\S", description: "Shown to reviewers; surrounding whitespace is trimmed" }],
  [PlanRequest.shape.reason, { description: "Why the agent proposes this; shown to reviewers" }],
  [PlanRequest.shape.ttlSeconds, {
    minimum: 10,
    description: "Seconds the plan may wait for decisions: at least 10, at most the policy's maximum; the policy's default when absent",
  }],
  [PlanRequest.shape.onBehalfOf, { description: "The Slack user the agent acts for; they cannot approve their own request" }],
  [PlanRequest.shape.idempotencyKey, { description: "A retry with the same key and body answers 200 with the same plan; the same key with another body is a 409" }],
  [HttpJsonAction, {
    description:
      "One write to a JSON-over-HTTP target. `merge` (RFC 7396) and `replace` and `create` need a `body` (an object or array for `replace` and `create`); `delete` takes none.",
    allOf: [
      {
        if: { properties: { op: { const: "delete" } }, required: ["op"] },
        then: { not: { required: ["body"] } },
        else: { required: ["body"] },
      },
      {
        if: { properties: { op: { enum: ["replace", "create"] } }, required: ["op"] },
        then: { properties: { body: { type: ["object", "array"] } } },
      },
    ],
  }],
  [HttpJsonAction.shape.target, { description: "A target name from the server's configuration" }],
  [HttpJsonAction.shape.path, {
    pattern: TARGET_PATH_PATTERN,
    description:
      "Relative to the target's baseUrl, starting with '/'; no query or fragment, no '.' or '..' segments (encoded or not), no empty segments, no encoded '/', '\\' or '%'",
  }],
]);

type JsonSchema = Record<string, unknown>;

function convert(schemas: Record<string, z.core.$ZodType>, io: "input" | "output", extras?: Map<z.core.$ZodType, JsonSchema>): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const { schemas: out } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    uri: (id) => `#/components/schemas/${id}`,
    ...(extras ? { override: ({ zodSchema, jsonSchema }) => void Object.assign(jsonSchema, extras.get(zodSchema)) } : {}),
  });
  const result: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(out)) {
    // `$id` with a fragment is not a valid URI reference for a schema; the document is the base.
    const { $schema: _schema, $id: _id, ...rest } = schema as JsonSchema;
    result[id] = rest;
  }
  return inlineSharedJsonValues(result);
}

/**
 * zod puts recursive schemas that were not named into `__shared`; here those are the other
 * `z.json()`s (in the executor's outcome). Each is the JSON-value schema again, so refer to
 * `JsonValue` instead. Anything else would be a new recursive schema that needs a name.
 */
function inlineSharedJsonValues(schemas: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const { __shared: shared, ...named } = schemas;
  if (!shared) return named;
  const defs = (shared.$defs ?? {}) as Record<string, JsonSchema>;
  const jsonValueRef = "#/components/schemas/JsonValue";
  const replacements = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) {
    const ownRef = `#/components/schemas/__shared#/$defs/${name}`;
    const normalized = JSON.parse(JSON.stringify(def).replaceAll(JSON.stringify(ownRef), JSON.stringify(jsonValueRef))) as unknown;
    if (!isDeepStrictEqual(normalized, named.JsonValue)) {
      throw new Error(`openapi: an unnamed recursive schema (${name}) is not the JSON-value schema; give it a component name`);
    }
    replacements.set(ownRef, jsonValueRef);
  }
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== "object" || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, k === "$ref" && typeof v === "string" ? (replacements.get(v) ?? v) : rewrite(v)]),
    );
  };
  return rewrite(named) as Record<string, JsonSchema>;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ "application/json": { schema } });

/** An error response, listing the codes this operation can answer with at this status. */
function errors(status: number, codes: (ErrorCode | "internal")[], what: string) {
  const wrong = codes.filter((c) => c !== "internal" && ERROR_STATUS[c] !== status);
  if (wrong.length) throw new Error(`openapi: ${wrong.join(", ")} is not answered with ${status}`);
  return { [status]: { description: `${what}: ${codes.map((c) => `\`${c}\``).join(", ")}`, content: json(ref("ErrorBody")) } };
}

const common = {
  ...errors(401, ["unauthorized"], "No, unknown or revoked agent key"),
  ...errors(500, ["internal"], "Countersign failed; the detail is in its server log"),
};
const ownPlan = {
  ...common,
  ...errors(404, ["not_found"], "No such plan for this agent (another agent's plan looks the same)"),
};
const planIdParameter = {
  name: "id",
  in: "path",
  required: true,
  description: "The plan's id",
  schema: { type: "string", format: "uuid" },
};
const planResponse = (description: string) => ({ description, content: json(ref("PlanView")) });

function build(publicUrl: string): object {
  const request = convert(REQUEST_SCHEMAS, "input", REQUEST_EXTRAS);
  const response = convert(RESPONSE_SCHEMAS, "output");
  if (!isDeepStrictEqual(request.JsonValue, response.JsonValue)) throw new Error("openapi: JsonValue differs between input and output");
  const { $schema: _s, ...timeout } = z.toJSONSchema(z.number().min(0).max(MAX_WAIT_SECONDS).default(30), { target: "draft-2020-12", io: "input" });

  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    info: {
      title: "Countersign agent API",
      version: pkg.version,
      description:
        "AI agents propose plans of writes; people approve them; a separate executor applies exactly what was signed. Every call but this document needs `Authorization: Bearer <agent key>` (`countersign agents add NAME` creates one). An agent sees only its own plans.",
    },
    servers: [{ url: publicUrl.replace(/\/+$/, "") }],
    security: [{ agentKey: [] }],
    tags: [{ name: "plans" }, { name: "meta" }],
    paths: {
      "/v1/plans": {
        post: {
          operationId: "submitPlan",
          tags: ["plans"],
          summary: "Propose a plan",
          description:
            "Validates the plan, previews every action against its target with read-only credentials, and stores it `pending` for review. Nothing is stored when anything fails.",
          requestBody: { required: true, content: json(ref("PlanRequest")) },
          responses: {
            201: planResponse("The plan was created and awaits review"),
            200: planResponse("A retry with the same `idempotencyKey` and body: the plan created earlier"),
            ...errors(400, ["invalid_json", "invalid_request"], "The body is not JSON, or not a valid plan (see `issues`)"),
            ...common,
            ...errors(409, ["idempotency_conflict"], "The `idempotencyKey` was used for a different plan (`details.planId`)"),
            ...errors(413, ["payload_too_large"], `The body is over ${LIMITS.maxBodyBytes / 1024} KiB`),
            ...errors(415, ["unsupported_media_type"], "The body is not sent as `Content-Type: application/json`"),
            ...errors(422, ["unknown_target", "preview_failed", "policy_denied"], "The plan is well-formed but cannot be proposed"),
          },
        },
      },
      "/v1/plans/{id}": {
        get: {
          operationId: "getPlan",
          tags: ["plans"],
          summary: "Read a plan, with its approvals, rejection and outcome",
          parameters: [planIdParameter],
          responses: { 200: planResponse("The plan"), ...ownPlan },
        },
      },
      "/v1/plans/{id}/wait": {
        get: {
          operationId: "waitForPlan",
          tags: ["plans"],
          summary: "Long-poll until the plan leaves pending/approved/executing",
          description: "Answers as soon as the plan reaches a final status, or with the plan as it is when `timeout` runs out.",
          parameters: [
            planIdParameter,
            { name: "timeout", in: "query", required: false, description: "Seconds to wait at most", schema: timeout },
          ],
          responses: {
            200: planResponse("The plan, final or as it was when the time ran out"),
            ...errors(400, ["invalid_request"], `\`timeout\` is not a number from 0 to ${MAX_WAIT_SECONDS}`),
            ...ownPlan,
          },
        },
      },
      "/v1/plans/{id}/cancel": {
        post: {
          operationId: "cancelPlan",
          tags: ["plans"],
          summary: "Withdraw a pending plan",
          parameters: [planIdParameter],
          responses: {
            200: planResponse("The plan, now `cancelled`"),
            ...ownPlan,
            ...errors(409, ["already_decided", "plan_expired"], "The plan is no longer pending (`details.status` or `details.expiresAt`)"),
          },
        },
      },
      "/v1/plans/{id}/events": {
        get: {
          operationId: "listPlanEvents",
          tags: ["plans"],
          summary: "The plan's audit trail",
          parameters: [planIdParameter],
          responses: { 200: { description: "The plan's audit events, oldest first", content: json(ref("PlanEvents")) }, ...ownPlan },
        },
      },
      "/v1/openapi.json": {
        get: {
          operationId: "getOpenApiDocument",
          tags: ["meta"],
          summary: "This document",
          security: [],
          responses: { 200: { description: "The OpenAPI 3.1 document of the agent API", content: json({ type: "object" }) } },
        },
      },
    },
    components: {
      securitySchemes: {
        agentKey: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <agent key>`" },
      },
      schemas: { ...response, ...request },
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

const built = new Map<string, object>();

/** The OpenAPI 3.1 document of the agent API, built once per public URL. Frozen: copy it to change it. */
export function openApiDocument(publicUrl: string): object {
  let document = built.get(publicUrl);
  if (!document) {
    document = deepFreeze(build(publicUrl));
    built.set(publicUrl, document);
  }
  return document;
}
