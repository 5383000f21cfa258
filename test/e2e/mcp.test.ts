import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACTION_KINDS } from "../../src/plan/schema.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { BIN, runCli } from "../support/cli.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";

/** `countersign mcp` as an MCP client runs it: a child process over real stdio, against a real server. */
describe("countersign mcp over stdio", () => {
  const s = useServer(pglite, {
    seed: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
  });
  let key: string;
  let client: Client;
  let transport: StdioClientTransport;
  let stderr = "";

  const mcpEnv = (): Record<string, string> => ({
    COUNTERSIGN_URL: s.server.url,
    COUNTERSIGN_AGENT_KEY: key,
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
  });
  const call = async (name: string, args: Record<string, unknown>, timeout?: number) =>
    (await client.callTool({ name, arguments: args }, undefined, timeout ? { timeout } : undefined)) as CallToolResult;
  const text = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  const structured = <T = Record<string, unknown>>(result: CallToolResult) => result.structuredContent as T;
  const getPlan = async (id: string) =>
    (await (await fetch(`${s.server.url}/v1/plans/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as PlanView;
  const proposal = (n: number, overrides: Record<string, unknown> = {}) => ({
    title: `Update contact ${n}'s email`,
    reason: "Customer asked by phone, ticket 4411",
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: `c${n}@new.example` } }],
    ...overrides,
  });

  beforeAll(async () => {
    key = (await addAgent(s.server.ctx, { name: "mcp-agent" })).key;
    transport = new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp"], env: mcpEnv(), stderr: "pipe" });
    transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    client = new Client({ name: "countersign-test", version: "1.0.0" });
    await client.connect(transport);
  });

  afterAll(async () => {
    await client?.close();
  });

  it("lists exactly the four tools, annotated as touching no target, with the plan request as input schema", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_plan", "propose_plan", "propose_undo", "wait_for_outcome"]);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));

    const propose = byName.propose_plan!;
    expect(propose.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
    expect(propose.description).toContain("idempotencyKey");
    const schema = propose.inputSchema as {
      type: string;
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, { description?: string; items?: { oneOf?: { properties: Record<string, { description?: string; enum?: string[] }> }[] } }>;
    };
    expect(schema.type).toBe("object");
    expect(schema.required.sort()).toEqual(["actions", "title"]);
    expect(schema.additionalProperties).toBe(false);
    for (const field of ["title", "reason", "actions", "ttlSeconds", "onBehalfOf", "idempotencyKey"]) {
      expect(schema.properties[field]?.description, field).toBeTruthy();
    }
    // One entry per action kind the plan schema has, each with every field described for the model.
    const kinds = schema.properties.actions!.items!.oneOf!.map((o) => o.properties);
    expect(kinds.map((k) => (k.kind as { const?: string }).const)).toEqual([...ACTION_KINDS]);
    const [http, row] = kinds;
    expect(http!.op!.enum).toEqual(["merge", "replace", "delete", "create"]);
    expect(Object.keys(http!).sort()).toEqual(["body", "kind", "op", "path", "target"]);
    expect(row!.op!.enum).toEqual(["update", "insert", "delete"]);
    expect(Object.keys(row!).sort()).toEqual(["key", "kind", "op", "table", "target", "values"]);
    for (const action of kinds) {
      for (const [field, property] of Object.entries(action)) expect(property.description, field).toBeTruthy();
    }

    expect(byName.propose_undo!.annotations).toEqual(propose.annotations);
    expect((byName.propose_undo!.inputSchema as { required: string[] }).required).toEqual(["planId"]);
    for (const name of ["get_plan", "wait_for_outcome"]) {
      expect(byName[name]!.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
      expect((byName[name]!.inputSchema as { required: string[] }).required).toContain("planId");
    }
    expect(byName.wait_for_outcome!.inputSchema.properties?.timeoutSeconds).toMatchObject({ type: "integer", minimum: 0, maximum: 600 });
  });

  it("propose_plan creates a real pending plan and returns its id, hash, expiry, changes and review URL; get_plan reads it", async () => {
    const result = await call("propose_plan", proposal(1));
    expect(result.isError).toBeFalsy();
    const proposed = structured<{ id: string; hash: string; status: string; expiresAt: string; reviewUrl: string }>(result);

    const plan = await getPlan(proposed.id);
    expect(plan.status).toBe("pending");
    expect(plan.plan.title).toBe("Update contact 1's email");
    expect(proposed).toMatchObject({ hash: plan.hash, status: "pending", expiresAt: plan.expiresAt, reviewUrl: plan.reviewUrl });
    expect(plan.reviewUrl).toBe(`http://countersign.test/plans/${plan.id}`);
    expect(text(result)).toContain(plan.reviewUrl);
    expect(text(result)).toContain(plan.hash);
    expect(text(result)).toContain('/email: "c1@old.example" → "c1@new.example"');
    // Proposing wrote nothing to the target.
    expect(s.target.writes()).toEqual([]);
    expect(s.target.get("/contacts/1")).toEqual({ id: 1, email: "c1@old.example" });

    const got = await call("get_plan", { planId: plan.id });
    expect(got.isError).toBeFalsy();
    expect(structured(got)).toMatchObject({ planId: plan.id, hash: plan.hash, status: "pending", final: false, title: plan.plan.title, approvals: [] });
    expect(text(got)).toContain(`Plan ${plan.id}: pending`);
  });

  it("answers an idempotent retry with the same plan", async () => {
    const first = structured<{ id: string }>(await call("propose_plan", proposal(2, { idempotencyKey: "mcp-retry-1" })));
    const second = structured<{ id: string }>(await call("propose_plan", proposal(2, { idempotencyKey: "mcp-retry-1" })));
    expect(second.id).toBe(first.id);
  });

  it("turns the server's refusals into tool errors with its code", async () => {
    const unknown = await call("propose_plan", proposal(3, { actions: [{ kind: "http.json", target: "nope", path: "/contacts/3", op: "delete" }] }));
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toMatch(/^unknown_target: /);
    expect(structured<{ error: { code: string } }>(unknown).error.code).toBe("unknown_target");

    const missing = await call("get_plan", { planId: "00000000-0000-4000-8000-000000000000" });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toMatch(/^not_found: /);

    // An undo of a plan nothing was applied from yet.
    const pending = structured<{ id: string }>(await call("propose_plan", proposal(5)));
    const undo = await call("propose_undo", { planId: pending.id });
    expect(undo.isError).toBe(true);
    expect(structured<{ error: { code: string; details: { status: string } } }>(undo).error).toMatchObject({
      code: "not_undoable",
      details: { status: "pending" },
    });
  });

  it("refuses arguments that are not a plan request before reaching the server", async () => {
    const result = await call("propose_plan", { title: "no actions" });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("actions");
  });

  it("wait_for_outcome returns rejected with the reviewer's reason", async () => {
    const proposed = structured<{ id: string; hash: string }>(await call("propose_plan", proposal(4)));
    const waiting = call("wait_for_outcome", { planId: proposed.id, timeoutSeconds: 90 }, 100_000);
    await new Promise((r) => setTimeout(r, 300));
    await decide(s.server.ctx, {
      planId: proposed.id,
      hash: proposed.hash,
      actor: { userId: "U0BOB", via: "slack" },
      verdict: "reject",
      reason: "wrong customer",
    });
    const result = await waiting;
    expect(result.isError).toBeFalsy();
    expect(structured(result)).toMatchObject({ planId: proposed.id, status: "rejected", final: true, reason: "wrong customer", approvals: [] });
    expect(text(result)).toContain(`Plan ${proposed.id}: rejected: wrong customer`);
  });

  it("wait_for_outcome says a plan is still open when its timeout passes", async () => {
    const proposed = structured<{ id: string }>(await call("propose_plan", proposal(5)));
    const result = await call("wait_for_outcome", { planId: proposed.id, timeoutSeconds: 0 });
    expect(result.isError).toBeFalsy();
    expect(structured(result)).toMatchObject({ planId: proposed.id, status: "pending", final: false });
    expect(text(result)).toContain("still pending");
  });

  it("writes nothing to stdout but JSON-RPC messages", async () => {
    const child = spawn(process.execPath, [BIN, "mcp"], { env: mcpEnv(), stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    const send = (message: object) => child.stdin.write(JSON.stringify(message) + "\n");
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    await waitFor("the answer to tools/list", () => out.includes('"id":2'));
    child.stdin.end();
    // Closing stdin ends the session: the process exits by itself, successfully.
    expect(await exited).toBe(0);
    const lines = out.split("\n").filter((l) => l !== "");
    expect(lines.length).toBe(2);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: "2.0" });
    expect(stderr).toContain("countersign mcp: serving");
  });

  it("refuses to start without its environment, naming the missing variable", async () => {
    const result = await runCli(["mcp"], { cwd: process.cwd(), env: { COUNTERSIGN_URL: s.server.url } });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("COUNTERSIGN_AGENT_KEY");
    expect(result.stderr).not.toContain("COUNTERSIGN_URL:");
  });
});
