import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { PostgresRowAction } from "../plan/postgres-row-schema.ts";
import { HttpJsonAction, LIMITS, PlanRequest } from "../plan/schema.ts";
import { REQUEST_COMPONENTS, RESPONSE_COMPONENTS } from "./agent-api.ts";

export type JsonSchema = Record<string, unknown>;

/** Where a component is found: the OpenAPI document's place for named schemas. */
export const COMPONENT_PREFIX = "#/components/schemas/";

/** URL-path characters, no leading `//`: the part of the server's path check a pattern can say. */
const TARGET_PATH_PATTERN = "^/([A-Za-z0-9\\-._~!$&'()*+,;=:@%][A-Za-z0-9\\-._~!$&'()*+,;=:@%/]*)?$";

/**
 * What the zod schemas check in code (superRefine, trim) and JSON Schema can still say, or
 * at least describe. Merged into the generated schema of each zod schema named here.
 */
const REQUEST_EXTRAS = new Map<z.core.$ZodType, JsonSchema>([
  [
    PlanRequest,
    {
      description:
        "A plan an agent proposes. Beyond this schema the server also refuses (400 `invalid_request`) a plan with two actions on the same resource (one target and path, or one target, table and key: merge them into one), a `ttlSeconds` above the policy's maximum, and bodies nested deeper than " +
        `${LIMITS.maxDepth} levels; the whole request may be at most ${LIMITS.maxBodyBytes / 1024} KiB (413).`,
    },
  ],
  [PlanRequest.shape.title, { pattern: "\\S", description: "Shown to reviewers; surrounding whitespace is trimmed" }],
  [PlanRequest.shape.reason, { description: "Why the agent proposes this; shown to reviewers" }],
  [
    PlanRequest.shape.ttlSeconds,
    {
      minimum: 10,
      description: "Seconds the plan may wait for decisions: at least 10, at most the policy's maximum; the policy's default when absent",
    },
  ],
  [PlanRequest.shape.onBehalfOf, { description: "The Slack user the agent acts for; they cannot approve their own request" }],
  [
    PlanRequest.shape.idempotencyKey,
    { description: "A retry with the same key and body answers 200 with the same plan; the same key with another body is a 409" },
  ],
  [
    HttpJsonAction,
    {
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
    },
  ],
  [HttpJsonAction.shape.target, { description: "A target name from the server's configuration" }],
  [
    PostgresRowAction,
    {
      description:
        "One row of a configured PostgreSQL table (a target with `adapter: postgres.row`). `update` needs `values` (the columns it sets); `insert` gives the key and the columns it sets (NOT NULL columns without a default included); `delete` takes no values. " +
        "Values are JSON in each column type's one form (int8/numeric as decimal strings, timestamptz as ISO-8601, bytea as base64) and are checked against the column types at preview (422 `preview_failed` naming the column). No SQL is ever taken from an action.",
      allOf: [
        { if: { properties: { op: { const: "delete" } }, required: ["op"] }, then: { not: { required: ["values"] } } },
        {
          if: { properties: { op: { const: "update" } }, required: ["op"] },
          then: { required: ["values"], properties: { values: { type: "object", minProperties: 1 } } },
        },
      ],
    },
  ],
  [PostgresRowAction.shape.target, { description: "A target name from the server's configuration, one with `adapter: postgres.row`" }],
  [PostgresRowAction.shape.table, { description: "A table the target's config lists and allows (`allow.tables`)" }],
  [PostgresRowAction.shape.key, { description: "The row's key: exactly the table's configured key columns, each a string or number" }],
  [
    HttpJsonAction.shape.path,
    {
      pattern: TARGET_PATH_PATTERN,
      description:
        "Relative to the target's baseUrl, starting with '/'; no query or fragment, no '.' or '..' segments (encoded or not), no empty segments, no encoded '/', '\\' or '%'",
    },
  ],
]);

function convert(schemas: Record<string, z.core.$ZodType>, io: "input" | "output", extras?: Map<z.core.$ZodType, JsonSchema>): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const { schemas: out } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    uri: (id) => COMPONENT_PREFIX + id,
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
  const jsonValueRef = COMPONENT_PREFIX + "JsonValue";
  const replacements = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) {
    const ownRef = `${COMPONENT_PREFIX}__shared#/$defs/${name}`;
    const normalized = JSON.parse(JSON.stringify(def).replaceAll(JSON.stringify(ownRef), JSON.stringify(jsonValueRef))) as unknown;
    if (!isDeepStrictEqual(normalized, named.JsonValue)) {
      throw new Error(`wire: an unnamed recursive schema (${name}) is not the JSON-value schema; give it a component name`);
    }
    replacements.set(ownRef, jsonValueRef);
  }
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== "object" || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === "$ref" && typeof v === "string" ? (replacements.get(v) ?? v) : rewrite(v)]));
  };
  return rewrite(named) as Record<string, JsonSchema>;
}

/**
 * The contract's named components as JSON Schema (draft 2020-12), referring to each other by
 * `#/components/schemas/<name>`: request bodies as the server accepts them (input), responses as
 * it answers (output). Both the OpenAPI document and the client's types are made from these.
 */
export function wireJsonSchemas(): { request: Record<string, JsonSchema>; response: Record<string, JsonSchema> } {
  const request = convert(REQUEST_COMPONENTS, "input", REQUEST_EXTRAS);
  const response = convert(RESPONSE_COMPONENTS, "output");
  if (!isDeepStrictEqual(request.JsonValue, response.JsonValue)) throw new Error("wire: JsonValue differs between input and output");
  return { request, response };
}
