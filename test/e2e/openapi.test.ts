import { readFileSync } from "node:fs";
import { compileErrors, validate as validateOpenApi } from "@readme/openapi-parser";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { beforeAll, describe, expect, it } from "vitest";
import { agentApi } from "../../src/server/agent-api.ts";
import { openApiDocument } from "../../src/server/openapi.ts";
import { ERROR_CODES } from "../../src/contract/agent-api.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";

interface Operation {
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; schema: object }[];
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}
interface OpenApiDoc {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { description?: string; properties?: Record<string, { description?: string }> }> };
}

/** Where ajv keeps the document, so that `#/components/...` refs resolve inside it. */
/** @readme/openapi-parser's `validate`, for a document read as JSON. */
const validateDocument = (document: unknown) => validateOpenApi(document as Parameters<typeof validateOpenApi>[0]);
const DOC_ID = "https://countersign.test/v1/openapi.json";
const pointer = (...segments: string[]) => segments.map((s) => "/" + encodeURIComponent(s.replaceAll("~", "~0").replaceAll("/", "~1"))).join("");

/** The routes docs/agents.md's "The HTTP API" table lists, as OpenAPI path templates. */
function documentedRoutes(): { method: string; path: string; query: string[] }[] {
  const page = readFileSync(new URL("../../docs/agents.md", import.meta.url), "utf8");
  const start = page.indexOf("## The HTTP API");
  expect(start, "docs/agents.md has a '## The HTTP API' section").toBeGreaterThanOrEqual(0);
  const section = page.slice(start, page.indexOf("\n## ", start + 1));
  return [...section.matchAll(/^\|\s*`(GET|POST|PUT|PATCH|DELETE) (\/[^`?\s]*)(?:\?([^`]*))?`/gm)].map((m) => ({
    method: m[1]!.toLowerCase(),
    path: m[2]!.replace(/:(\w+)/g, "{$1}"),
    query: m[3] ? [...new URLSearchParams(m[3]).keys()] : [],
  }));
}

describe("OpenAPI document of the agent API", () => {
  const s = useServer(pglite, { seed: { "/contacts/1": { id: 1, email: "ana@old.example" }, "/contacts/2": { id: 2, email: "bruno@example.com" } } });
  let key: string;
  let doc: OpenApiDoc;
  let ajv: Ajv2020;

  type Send = { body?: string | object; key?: string | null; contentType?: string };
  const call = (method: string, path: string, init: Send = {}) =>
    fetch(s.server.url + path, {
      method,
      headers: { ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? key}` }), "content-type": init.contentType ?? "application/json" },
      ...(init.body !== undefined ? { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) } : {}),
    });

  /** The compiled schema of one documented JSON response. */
  const responseSchema = (path: string, method: string, status: number): ValidateFunction => {
    const found = ajv.getSchema(DOC_ID + "#" + pointer("paths", path, method, "responses", String(status), "content", "application/json", "schema"));
    if (!found) throw new Error(`the document has no JSON ${status} response for ${method.toUpperCase()} ${path}`);
    return found;
  };
  const componentSchema = (name: string): ValidateFunction => {
    const found = ajv.getSchema(DOC_ID + "#" + pointer("components", "schemas", name));
    if (!found) throw new Error(`the document has no schema ${name}`);
    return found;
  };
  /** Asserts the body matches the schema, showing ajv's errors when it does not. */
  const expectConforms = (validateBody: ValidateFunction, body: unknown) => {
    const ok = validateBody(body);
    expect(ok ? [] : ajv.errorsText(validateBody.errors, { separator: "\n" }).split("\n"), JSON.stringify(body).slice(0, 500)).toEqual([]);
  };
  /** Sends a request and checks that its answer is one the document lists for it, with a body its schema accepts. */
  const exchange = async (docPath: string, method: string, actualPath: string, init: Send = {}) => {
    const res = await call(method.toUpperCase(), actualPath, init);
    const body: unknown = await res.json();
    expectConforms(responseSchema(docPath, method, res.status), body);
    return {
      status: res.status,
      body: body as { id: string; status: string; error: { code: string; message?: string; issues?: { path: string }[]; details?: Record<string, unknown> } },
    };
  };
  const mergeAction = (path = "/contacts/1") => ({ kind: "http.json", target: "crm", path, op: "merge", body: { email: "ana@new.example" } });

  beforeAll(async () => {
    key = (await addAgent(s.server.ctx, { name: "openapi-agent" })).key;

    const res = await fetch(`${s.server.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as OpenApiDoc;

    ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
    addFormats.default(ajv);
    ajv.addKeyword("paths");
    ajv.addKeyword("components");
    ajv.addSchema({ $id: DOC_ID, paths: doc.paths, components: doc.components });
  });

  it("is served at /v1/openapi.json without authentication, as the document openApiDocument builds", async () => {
    const res = await fetch(`${s.server.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument("http://countersign.test"))));
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.servers).toEqual([{ url: "http://countersign.test" }]);
    expect(openApiDocument("http://countersign.test")).toBe(openApiDocument("http://countersign.test"));
    // Serving the document opened nothing else.
    expect((await call("GET", "/v1/plans/00000000-0000-4000-8000-000000000000", { key: null })).status).toBe(401);
  });

  it("is a valid OpenAPI 3.1 document according to @readme/openapi-parser", async () => {
    const result = await validateDocument(structuredClone(doc));
    expect(result.valid, compileErrors(result)).toBe(true);
    expect(result.specification).toBe("OpenAPI");
    expect(result.warnings).toEqual([]);
  });

  it("would be refused by the validator if it were broken (the check is not vacuous)", async () => {
    const broken = structuredClone(doc) as OpenApiDoc & { info?: unknown };
    delete broken.info;
    broken.paths["/v1/plans/{id}"]!.get!.parameters = [];
    const result = await validateDocument(broken);
    expect(result.valid).toBe(false);
  });

  it("documents every route docs/agents.md lists, and no executor or admin route", () => {
    const routes = documentedRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(5);
    for (const { method, path, query } of routes) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method.toUpperCase()} ${path}`).toBeDefined();
      for (const name of query)
        expect(
          operation!.parameters?.some((p) => p.in === "query" && p.name === name),
          `${path}?${name}`,
        ).toBe(true);
      if (path.includes("{id}")) expect(operation!.parameters).toContainEqual(expect.objectContaining({ name: "id", in: "path", required: true }));
    }
    expect(Object.keys(doc.paths).sort()).toEqual([...new Set([...routes.map((r) => r.path), "/v1/openapi.json"])].sort());
    expect(doc.paths["/v1/openapi.json"]!.get!.security).toEqual([]);
    const submit = doc.paths["/v1/plans"]!.post!;
    expect(Object.keys(submit.responses).sort()).toEqual(expect.arrayContaining(["200", "201", "400", "401", "409", "413", "422"]));
    expect(submit.requestBody?.content["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/PlanRequest" });
  });

  it("documents exactly the routes the agent API serves, each method and path", () => {
    const served = agentApi(s.server.ctx)
      .routes.filter((r) => r.method !== "ALL") // middleware (authentication)
      .map((r) => `${r.method.toLowerCase()} /v1${r.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = Object.entries(doc.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`));
    expect(served.length).toBeGreaterThanOrEqual(6);
    expect([...new Set(served)].sort()).toEqual(documented.sort());
  });

  it("describes the real 201 of POST /v1/plans, and the 200 of its idempotent retry", async () => {
    const request = { title: "Update Ana's email", reason: "ticket 4411", onBehalfOf: "U0REQUESTER", idempotencyKey: "openapi-201", actions: [mergeAction()] };
    const created = await exchange("/v1/plans", "post", "/v1/plans", { body: request });
    expect(created.status).toBe(201);
    const retried = await exchange("/v1/plans", "post", "/v1/plans", { body: request });
    expect(retried.status).toBe(200);
    expect(retried.body.id).toBe(created.body.id);
    // The response schema is closed and complete: a field more or less, or a wrong format, fails it.
    const planView = responseSchema("/v1/plans", "post", 201);
    const { preview: _preview, ...withoutPreview } = created.body as unknown as Record<string, unknown>;
    for (const wrong of [{}, withoutPreview, { ...created.body, extra: 1 }, { ...created.body, status: "done" }, { ...created.body, createdAt: "yesterday" }]) {
      expect(planView(wrong)).toBe(false);
    }

    const conflict = await exchange("/v1/plans", "post", "/v1/plans", { body: { ...request, title: "Another plan" } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("idempotency_conflict");
    expect(conflict.body.error.details).toEqual({ planId: created.body.id });
  });

  it("describes the real answers of read, wait, events and cancel, final and refused", async () => {
    const { body: plan } = await exchange("/v1/plans", "post", "/v1/plans", {
      body: { title: "Delete Bruno", actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "delete" }] },
    });
    expect((await exchange("/v1/plans/{id}", "get", `/v1/plans/${plan.id}`)).status).toBe(200);
    expect((await exchange("/v1/plans/{id}/wait", "get", `/v1/plans/${plan.id}/wait?timeout=0`)).body.status).toBe("pending");
    const cancelled = await exchange("/v1/plans/{id}/cancel", "post", `/v1/plans/${plan.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    const again = await exchange("/v1/plans/{id}/cancel", "post", `/v1/plans/${plan.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("already_decided");
    const events = await exchange("/v1/plans/{id}/events", "get", `/v1/plans/${plan.id}/events`);
    expect(events.status).toBe(200);
    expect((events.body as unknown as { events: { type: string }[] }).events.map((e) => e.type)).toEqual(["plan.submitted", "plan.cancelled"]);

    const missing = await exchange("/v1/plans/{id}", "get", "/v1/plans/00000000-0000-4000-8000-000000000000");
    expect([missing.status, missing.body.error.code]).toEqual([404, "not_found"]);
    const anonymous = await exchange("/v1/plans/{id}/events", "get", `/v1/plans/${plan.id}/events`, { key: null });
    expect([anonymous.status, anonymous.body.error.code]).toEqual([401, "unauthorized"]);

    // The `timeout` parameter's schema and the server agree (the plan is final, so no call waits).
    const parameter = doc.paths["/v1/plans/{id}/wait"]!.get!.parameters!.find((p) => p.name === "timeout")!;
    const timeoutSchema = ajv.compile(parameter.schema);
    for (const timeout of ["0", "0.5", "60", "60.5", "61", "-1"]) {
      const res = await exchange("/v1/plans/{id}/wait", "get", `/v1/plans/${plan.id}/wait?timeout=${timeout}`);
      expect({ timeout, status: res.status }).toEqual({ timeout, status: timeoutSchema(Number(timeout)) ? 200 : 400 });
    }
  });

  it("describes the real error bodies of POST /v1/plans: 400, 401, 413, 415, 422", async () => {
    const cases: { send: Send; status: number; code: string }[] = [
      { send: { body: "{not json" }, status: 400, code: "invalid_json" },
      { send: { body: { title: "", actions: [] } }, status: 400, code: "invalid_request" },
      { send: { body: { title: "x", actions: [mergeAction()] }, key: null }, status: 401, code: "unauthorized" },
      { send: { body: { title: "x", actions: [mergeAction()] }, key: "cs_not-a-real-key" }, status: 401, code: "unauthorized" },
      { send: { body: { title: "x", reason: "y".repeat(300 * 1024), actions: [mergeAction()] } }, status: 413, code: "payload_too_large" },
      { send: { body: { title: "x", actions: [mergeAction()] }, contentType: "text/plain" }, status: 415, code: "unsupported_media_type" },
      { send: { body: { title: "x", actions: [{ ...mergeAction(), target: "erp" }] } }, status: 422, code: "unknown_target" },
      { send: { body: { title: "x", actions: [mergeAction("/contacts/404")] } }, status: 422, code: "preview_failed" },
    ];
    for (const { send, status, code } of cases) {
      const res = await exchange("/v1/plans", "post", "/v1/plans", send);
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status, code });
    }
    const invalid = await exchange("/v1/plans", "post", "/v1/plans", { body: { title: "x", actions: [mergeAction()], priority: "high" } });
    expect(invalid.body.error.issues).toEqual([{ path: "/priority", message: "unknown field 'priority'" }]);
  });

  it("is made from the wire contract: every answer code, the 503 of an unreachable database on every call, the signed webhook", () => {
    const codes = (doc.components.schemas.ErrorCode as { enum?: string[] }).enum;
    expect([...(codes ?? [])].sort()).toEqual([...ERROR_CODES].sort());
    expect(codes).toEqual(expect.arrayContaining(["not_a_reader", "database_unavailable", "unsupported_media_type", "internal"]));
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (path === "/v1/openapi.json") continue;
      for (const [method, operation] of Object.entries(operations))
        expect({ path, method, has503: "503" in operation.responses }).toEqual({ path, method, has503: true });
    }
    const webhook = (doc as unknown as { webhooks: Record<string, { post: Operation }> }).webhooks.planStatusChanged!.post;
    expect(webhook.requestBody?.content["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/WebhookPayload" });
    const payload = componentSchema("WebhookPayload");
    const approval = { userId: "U0ALICE", via: "slack", at: "2026-01-01T00:00:00Z" };
    expectConforms(payload, { planId: "00000000-0000-4000-8000-000000000000", hash: `sha256:${"a".repeat(64)}`, status: "approved", approvals: [approval] });
    expect(payload({ planId: "00000000-0000-4000-8000-000000000000", hash: `sha256:${"a".repeat(64)}`, status: "done", approvals: [] })).toBe(false);
  });

  describe("the PlanRequest schema and the server agree on examples", () => {
    let validRequest: ValidateFunction;
    beforeAll(() => {
      validRequest = componentSchema("PlanRequest");
    });
    const submitStatus = async (body: unknown) => (await exchange("/v1/plans", "post", "/v1/plans", { body: body as object })).status;

    const valid: [string, object][] = [
      ["a minimal merge", { title: "Update Ana", actions: [mergeAction()] }],
      ["a title with surrounding whitespace", { title: "  Update Ana  ", actions: [mergeAction()] }],
      [
        "every field and every op",
        {
          title: "Tidy up contacts",
          reason: "Customer asked, ticket 4412",
          ttlSeconds: 600,
          onBehalfOf: "U0REQUESTER",
          idempotencyKey: "openapi-every-field",
          actions: [
            { kind: "http.json", target: "crm", path: "/contacts/1", op: "replace", body: { id: 1, email: "ana@new.example" } },
            { kind: "http.json", target: "crm", path: "/contacts/2", op: "delete" },
            { kind: "http.json", target: "crm", path: "/contacts/9", op: "create", body: { id: 9, email: "new@example.com" } },
          ],
        },
      ],
      ["a merge with a scalar body", { title: "Odd merge", actions: [{ ...mergeAction(), body: "x" }] }],
    ];
    it.each(valid)("accepts %s, and so does the server (201)", async (_name, body) => {
      expect(validRequest(body)).toBe(true);
      expect(await submitStatus(body)).toBe(201);
    });

    const twentyOne = Array.from({ length: 21 }, (_, i) => mergeAction(`/contacts/${i + 1}`));
    const invalid: [string, object][] = [
      ["an empty object", {}],
      ["a whitespace-only title", { title: "   ", actions: [mergeAction()] }],
      ["a title that is not a string", { title: 42, actions: [mergeAction()] }],
      ["an unknown field", { title: "x", actions: [mergeAction()], priority: "high" }],
      ["no actions", { title: "x", actions: [] }],
      ["21 actions", { title: "x", actions: twentyOne }],
      ["an unknown op", { title: "x", actions: [{ ...mergeAction(), op: "patch" }] }],
      ["an unknown action field", { title: "x", actions: [{ ...mergeAction(), method: "PUT" }] }],
      ["a merge without a body", { title: "x", actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge" }] }],
      ["a delete with a body", { title: "x", actions: [{ ...mergeAction(), op: "delete" }] }],
      ["a replace with a string body", { title: "x", actions: [{ ...mergeAction(), op: "replace", body: "x" }] }],
      ["a create with a null body", { title: "x", actions: [{ ...mergeAction("/contacts/9"), op: "create", body: null }] }],
      ["a relative path", { title: "x", actions: [mergeAction("contacts/1")] }],
      ["a path naming another host", { title: "x", actions: [mergeAction("//evil.example/contacts/1")] }],
      ["an absolute URL", { title: "x", actions: [mergeAction("https://evil.example/contacts/1")] }],
      ["a path with a query", { title: "x", actions: [mergeAction("/contacts/1?x=1")] }],
      ["a path with a backslash", { title: "x", actions: [mergeAction("/contacts\\1")] }],
      ["an onBehalfOf that is not a Slack id", { title: "x", actions: [mergeAction()], onBehalfOf: "alice" }],
      ["a ttlSeconds of 0", { title: "x", actions: [mergeAction()], ttlSeconds: 0 }],
      ["a ttlSeconds under 10", { title: "x", actions: [mergeAction()], ttlSeconds: 5 }],
      ["a fractional ttlSeconds", { title: "x", actions: [mergeAction()], ttlSeconds: 600.5 }],
      ["an empty idempotencyKey", { title: "x", actions: [mergeAction()], idempotencyKey: "" }],
    ];
    it.each(invalid)("refuses %s, and so does the server (400 invalid_request)", async (_name, body) => {
      expect(validRequest(body)).toBe(false);
      const res = await exchange("/v1/plans", "post", "/v1/plans", { body });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: "invalid_request" });
    });

    it("refuses an unknown action kind, and the server answers 422 unknown_kind naming it and the kinds it has", async () => {
      const body = { title: "x", actions: [{ ...mergeAction(), kind: "http.xml" }] };
      expect(validRequest(body)).toBe(false);
      const res = await exchange("/v1/plans", "post", "/v1/plans", { body });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 422, code: "unknown_kind" });
      expect(res.body.error.message).toBe("actions[0]: no adapter of kind 'http.xml'; known kinds: http.json, postgres.row");
      expect(res.body.error.issues).toEqual([{ path: "/actions/0/kind", message: "no adapter of kind 'http.xml'; known kinds: http.json, postgres.row" }]);
    });

    const row = (fields: object = {}) => ({
      kind: "postgres.row",
      target: "crmdb",
      table: "contacts",
      key: { id: 42 },
      op: "update",
      values: { email: "ada@example.com" },
      ...fields,
    });
    it.each<[string, object, boolean]>([
      ["a postgres.row update", row(), true],
      ["a postgres.row insert with a composite key", row({ op: "insert", key: { id: "7", region: "eu" } }), true],
      ["a postgres.row delete", { ...row({ op: "delete" }), values: undefined }, true],
      ["a postgres.row update without values", { ...row(), values: undefined }, false],
      ["a postgres.row update with empty values", row({ values: {} }), false],
      ["a postgres.row delete with values", row({ op: "delete" }), false],
      ["a postgres.row http.json op", row({ op: "merge" }), false],
      ["a postgres.row key value that is an object", row({ key: { id: { $gt: 1 } } }), false],
      ["a postgres.row action with a path", row({ path: "/contacts/42" }), false],
    ])("the schema describes postgres.row actions too: %s", (_name, action, ok) => {
      expect(validRequest(JSON.parse(JSON.stringify({ title: "x", actions: [action] })))).toBe(ok);
    });

    it("documents an example of each kind, and each is a valid PlanRequest", () => {
      const examples = (doc.paths["/v1/plans"]!.post!.requestBody!.content["application/json"] as { examples?: Record<string, { value: unknown }> }).examples!;
      expect(Object.keys(examples).sort()).toEqual(["httpJson", "postgresRow"]);
      for (const { value } of Object.values(examples)) expectConforms(validRequest, value);
    });

    // What the server checks in code and the schema can only describe: it accepts these, the server does not.
    let deep: unknown = "bottom";
    for (let i = 0; i < 40; i++) deep = { down: deep };
    const planRequest = (d: OpenApiDoc) => d.components.schemas.PlanRequest!.description!;
    const targetPath = (d: OpenApiDoc) => d.components.schemas.HttpJsonAction!.properties!.path!.description!;
    const ttl = (d: OpenApiDoc) => d.components.schemas.PlanRequest!.properties!.ttlSeconds!.description!;
    const described: [string, object, string, (d: OpenApiDoc) => string, RegExp][] = [
      [
        "two actions on the same resource",
        { title: "x", actions: [mergeAction(), { ...mergeAction(), body: { name: "Ana" } }] },
        "/actions/1/path",
        planRequest,
        /two actions on the same resource/,
      ],
      ["a '..' segment", { title: "x", actions: [mergeAction("/contacts/../1")] }, "/actions/0/path", targetPath, /no '\.' or '\.\.' segments/],
      ["an encoded '/'", { title: "x", actions: [mergeAction("/contacts/a%2Fb")] }, "/actions/0/path", targetPath, /no encoded '\/'/],
      [
        "a ttlSeconds over the policy's maximum",
        { title: "x", actions: [mergeAction()], ttlSeconds: 10 * 86_400 },
        "/ttlSeconds",
        ttl,
        /at most the policy's maximum/,
      ],
      [
        "a body nested 40 levels deep",
        { title: "x", actions: [{ ...mergeAction(), body: deep }] },
        "/actions/0/body/",
        planRequest,
        /nested deeper than 32 levels/,
      ],
    ];
    it.each(described)("documents, but cannot express, that the server refuses %s", async (_name, body, issuePath, description, phrase) => {
      expect(validRequest(body)).toBe(true);
      const res = await exchange("/v1/plans", "post", "/v1/plans", { body });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: "invalid_request" });
      expect(res.body.error.issues).toHaveLength(1);
      expect(res.body.error.issues![0]!.path.startsWith(issuePath)).toBe(true);
      expect(description(doc)).toMatch(phrase);
    });
  });
});
