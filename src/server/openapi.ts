import { z } from "zod";
import pkg from "../../package.json" with { type: "json" };
import { LIMITS } from "../plan/schema.ts";
import { MAX_WAIT_SECONDS } from "../service/intake/index.ts";
import type { ErrorCode } from "../contract/agent-api.ts";
import { COMPONENT_PREFIX, wireJsonSchemas, type JsonSchema } from "../contract/json-schema.ts";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";

/*
 * The OpenAPI 3.1 document of the agent API (`/v1`, without the executor's routes). Its schemas
 * are the wire contract's (src/contract/agent-api.ts); this module adds only the operations.
 */

/** The status each code is answered with; the two that are not the service's refusals are fixed here. */
const STATUS_OF: Record<ErrorCode, number> = { ...HTTP_STATUS_OF, database_unavailable: 503, internal: 500 };

const ref = (name: string) => ({ $ref: COMPONENT_PREFIX + name });
const json = (schema: JsonSchema) => ({ "application/json": { schema } });

/** An error response, listing the codes this operation can answer with at this status. */
function errors(status: number, codes: ErrorCode[], what: string) {
  const wrong = codes.filter((c) => STATUS_OF[c] !== status);
  if (wrong.length) throw new Error(`openapi: ${wrong.join(", ")} is not answered with ${status}`);
  return { [status]: { description: `${what}: ${codes.map((c) => `\`${c}\``).join(", ")}`, content: json(ref("ErrorBody")) } };
}

const common = {
  ...errors(401, ["unauthorized"], "No, unknown or revoked agent key"),
  ...errors(500, ["internal"], "Countersign failed; the detail is in its server log"),
  ...errors(503, ["database_unavailable"], "Countersign's database cannot be reached for the moment; nothing was done, retry after `Retry-After` seconds"),
};
const ownPlan = {
  ...common,
  ...errors(404, ["not_found"], "No such plan for this agent (another agent's plan looks the same)"),
};
/** The header a refusal that passes with time carries (as `details.retryAfterSeconds` too). */
function withRetryAfter<T extends Record<number, object>>(response: T): T {
  const header = { "Retry-After": { description: "Whole seconds to wait before retrying (at least 1)", schema: { type: "integer", minimum: 1 } } };
  return Object.fromEntries(Object.entries(response).map(([status, r]) => [status, { ...r, headers: header }])) as T;
}
const planIdParameter = {
  name: "id",
  in: "path",
  required: true,
  description: "The plan's id",
  schema: { type: "string", format: "uuid" },
};
const planResponse = (description: string) => ({ description, content: json(ref("PlanView")) });

/** One plan request per kind of action, as an agent would send it. */
const SUBMIT_EXAMPLES = {
  httpJson: {
    summary: "http.json: merge a field into a JSON resource",
    value: {
      title: "Update Ana's email",
      reason: "Customer asked by phone, ticket 4411",
      actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }],
    },
  },
  postgresRow: {
    summary: "postgres.row: update one row of a configured table, found by its key",
    value: {
      title: "Update Ada's email",
      actions: [{ kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 42 }, op: "update", values: { email: "ada@example.com" } }],
    },
  },
};

function build(publicUrl: string): object {
  const { request, response } = wireJsonSchemas();
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
            "Validates the plan, previews every action against its target with read-only credentials, and stores it `pending` for review. Nothing is stored when anything fails. " +
            "Each action's `kind` is the adapter that reaches its target: `http.json` (a JSON resource over HTTP: a GET with the target's read headers) or `postgres.row` (one row of a configured PostgreSQL table: a SELECT with a read-only role; the preview shows the row's columns before and after and the version read). " +
            "A re-plan names the version it replaces in `supersedes` (one of this agent's plans that is `pending`, `approved` but not yet claimed, or `stale`): in the same transaction that version becomes `superseded` (a `stale` one stays `stale` and gains `supersededBy`); approvals never carry over, and reviewers see what changed since it.",
          requestBody: { required: true, content: { "application/json": { schema: ref("PlanRequest"), examples: SUBMIT_EXAMPLES } } },
          responses: {
            201: planResponse("The plan was created and awaits review"),
            200: planResponse("A retry with the same `idempotencyKey` and body: the plan created earlier"),
            ...errors(400, ["invalid_json", "invalid_request"], "The body is not JSON, or not a valid plan (see `issues`)"),
            ...common,
            ...errors(404, ["not_found"], "`supersedes` names no plan of this agent (another agent's plan looks the same)"),
            ...errors(
              409,
              ["idempotency_conflict", "not_supersedable"],
              "The `idempotencyKey` was used for a different plan (`details.planId`), or the plan named in `supersedes` can no longer be replaced: final, claimed by an executor, or already superseded (`details.status`, `details.supersededBy`)",
            ),
            ...errors(413, ["payload_too_large"], `The body is over ${LIMITS.maxBodyBytes / 1024} KiB`),
            ...errors(415, ["unsupported_media_type"], "The body is not sent as `Content-Type: application/json`"),
            ...errors(
              422,
              ["unknown_kind", "unknown_target", "preview_failed", "policy_denied"],
              "The plan is well-formed but cannot be proposed: an action `kind` this server has no adapter for (`details.kinds` lists those it has), a target that is not configured or is of another kind, a preview the target refused (`details.target`, `details.path`; for postgres.row the message names the column, e.g. a value of the wrong type), or an action outside the target's `allow` block (`details.rules` names the config keys)",
            ),
            ...withRetryAfter(
              errors(
                429,
                ["rate_limited"],
                "The agent is at one of its limits (`limits.plansPerMinute`, `limits.maxPending`, or its own under `limits.agents.<name>`); nothing was stored (and no target read, unless this submission raced others of the agent past the first check). `details.limit` names the config key, `details.value` its value; retry after `Retry-After` seconds. A retry with an existing plan's `idempotencyKey` is never limited",
              ),
            ),
          },
        },
      },
      "/v1/plans/{id}": {
        get: {
          operationId: "getPlan",
          tags: ["plans"],
          summary: "Read a plan, with its approvals, rejection and outcome",
          description:
            "Once applied, each `outcome.actions[]` says whether the target, re-read after the write, holds what was approved (`verified`, and `driftAfterApply` where it does not). An approved plan waiting while Countersign is paused, or while the executors asking for work cannot verify its grant (`grant_key_mismatch`), carries `held` (reason, since); a revoked one carries `revocation` (who, why).",
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
          parameters: [planIdParameter, { name: "timeout", in: "query", required: false, description: "Seconds to wait at most", schema: timeout }],
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
      "/v1/plans/{id}/undo": {
        post: {
          operationId: "proposeUndo",
          tags: ["plans"],
          summary: "Ask for an applied plan to be taken back",
          description:
            "Makes a new plan whose actions restore what each written action of this one found, last written first (http.json: `merge` back with `null` for members the plan added, or `replace` with the document before where a merge patch cannot say it; `replace` back; `create` → `delete`; `delete` → `create`; postgres.row: `update` back, `insert` → `delete`, `delete` → `insert` of the row before). " +
            "It is previewed, checked against the targets' `allow` rules and approved by their policy like any plan, with `undoes` set in its hashed document; this plan gains `undoneBy` once it is applied. " +
            "For an `applied` plan, or a `failed` one with `outcome.partial` (its `applied` actions only). The body may be left out.",
          parameters: [planIdParameter],
          requestBody: { required: false, content: json(ref("UndoRequest")) },
          responses: {
            201: planResponse("The undo, pending review (`undoes` links this plan)"),
            200: planResponse("A retry with the same `idempotencyKey`: the undo made earlier"),
            ...errors(400, ["invalid_json", "invalid_request"], "The body is not JSON, or not a valid undo request"),
            ...ownPlan,
            ...errors(
              409,
              ["not_undoable", "undo_open", "undo_target_changed", "idempotency_conflict"],
              "The plan wrote nothing to take back or was taken back already (`details.status`, `details.undoneBy`); an undo of it is open (`details.planId`: decide or wait for that one); someone changed the target since, over fields the plan changed (`details.actions[].fields`: nothing was proposed); or the `idempotencyKey` was used for something else",
            ),
            ...errors(413, ["payload_too_large"], "The body is over 4 KiB"),
            ...errors(415, ["unsupported_media_type"], "A body not sent as `Content-Type: application/json`"),
            ...errors(
              422,
              ["undo_refused"],
              "An action of the undo cannot be proposed: its target's `allow` rules refuse it (e.g. `delete` not in `allow.ops` for an undone create), its preview fails (e.g. a column the database sets), or its quorum cannot be met; `issues` name each action",
            ),
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
    webhooks: {
      planStatusChanged: {
        post: {
          operationId: "planStatusChanged",
          summary: "Sent to a plan's `callbackUrl` on every status change",
          description:
            "Signed with the agent's webhook secret: `Countersign-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\">`; the client's `verifyWebhook` checks it. Retried until a 2xx answer.",
          requestBody: { required: true, content: json(ref("WebhookPayload")) },
          responses: { "2XX": { description: "Received; any other answer is retried" } },
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
