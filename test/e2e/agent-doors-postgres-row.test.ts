import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { RunContext } from "@openai/agents";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { PostgresRowTarget } from "../../src/plan/postgres-row-schema.ts";
import { Countersign, CountersignError, type ActionRequestInput, type PlanView, type PostgresRowAction } from "../../src/client/index.ts";
import { countersignTool } from "../../src/client/openai-agents.ts";
import { PostgresRowTargetConfig } from "../../src/config/schema.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { openRowDatabase, type RowDatabase } from "../support/adapters-postgres.ts";
import { BIN } from "../support/cli.ts";
import { pglite, postgresKind } from "../support/databases.ts";
import { silentLogger, targetConfig, testConfig, testGrantKeys } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";
import { waitFor } from "../support/wait-for.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
const EXECUTOR_TOKEN = "executor-token-agent-doors-0123456789";
const VERSION = "2026-12-03 09:00:00.000001+00";

/**
 * The agent doors with a postgres.row target: `countersign mcp` over real stdio, the
 * OpenAI Agents tool as the SDK's runner invokes it, and the typed client, against a real server
 * that previews with a SELECT-only role and a real executor holding the write role. A database of
 * the file's own on TEST_DATABASE_URL's server; its trigger counts every row written.
 */
describe.skipIf(!postgresKind || !adminUrl)("postgres.row through MCP, the OpenAI Agents tool and the typed client", () => {
  let db: RowDatabase;
  // Opened before the server (whose config names its roles) and closed after it.
  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
  }, 60_000);
  afterAll(async () => {
    await db?.close();
  });
  const rowTarget = () => ({
    adapter: "postgres.row",
    read: { url: db.readUrl },
    tables: { contacts: { key: ["id"], version: "updated_at" } },
    allow: { ops: ["update", "insert", "delete"], tables: ["contacts"] },
    timeoutMs: 10_000,
  });
  const s = useServer(pglite, {
    config: (crmUrl) => ({
      ...testConfig({ crm: targetConfig(crmUrl), crmdb: PostgresRowTargetConfig.parse({ ...rowTarget(), watch: { intervalSeconds: 0 } }) }),
      executorToken: EXECUTOR_TOKEN,
    }),
  });
  let key = "";
  let executor: { stop(): Promise<void> } | undefined;
  let mcp: Client | undefined;

  beforeAll(async () => {
    key = (await addAgent(s.server.ctx, { name: "row-doors-agent" })).key;
    // The write role is the executor's alone: the server above was given the read URL only.
    executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
      environment: "test",
      targets: { crmdb: PostgresRowTarget.parse({ ...rowTarget(), write: { url: db.writeUrl } }) },
      logger: silentLogger,
    });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp"],
      env: { COUNTERSIGN_URL: s.server.url, COUNTERSIGN_AGENT_KEY: key, PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
      stderr: "pipe",
    });
    mcp = new Client({ name: "countersign-row-test", version: "1.0.0" });
    await mcp.connect(transport);
  }, 60_000);
  afterAll(async () => {
    await mcp?.close();
    await executor?.stop();
  });

  beforeEach(async () => {
    await db.admin.unsafe(`
      DELETE FROM contacts;
      INSERT INTO contacts (id, name, email, score, updated_at) VALUES
        (42, 'Ada', 'ada@example.com', 12.5, '${VERSION}'),
        (43, 'Grace', 'grace@example.com', 7, '${VERSION}');`);
  });

  const row = (fields: Partial<PostgresRowAction> = {}): PostgresRowAction => ({
    kind: "postgres.row",
    target: "crmdb",
    table: "contacts",
    key: { id: 42 },
    op: "update",
    values: { email: "ada@lovelace.example" },
    ...fields,
  });
  const contact = async (id: number) =>
    (await db.admin<{ email: string | null; score: string | null }[]>`SELECT email, score::text FROM contacts WHERE id = ${id}`)[0];
  const approve = (plan: { id: string; hash: string }) =>
    decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
  const reject = (plan: { id: string; hash: string }, reason: string) =>
    decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "slack" }, verdict: "reject", reason });

  describe("countersign mcp", () => {
    const call = async (name: string, args: Record<string, unknown>, timeout?: number) =>
      (await mcp!.callTool({ name, arguments: args }, undefined, timeout ? { timeout } : undefined)) as CallToolResult;
    const text = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
    const proposal = (actions: object[], extra: object = {}) => ({
      title: "Update Ada's email",
      reason: "Ticket 4411",
      onBehalfOf: "U0REQUESTER",
      actions,
      ...extra,
    });
    type Proposed = { id: string; hash: string; preview: Record<string, unknown>[] };

    it("propose_plan takes a row update and answers with the row per column, before → after, and the version read; nothing is written", async () => {
      const writes = await db.writes();
      const result = await call("propose_plan", proposal([row({ values: { email: "ada@lovelace.example", score: "13.00" } })]));
      expect(result.isError, text(result)).toBeFalsy();
      const lines = text(result).split("\n");
      expect(lines).toContain(
        `  0. update crmdb table contacts key {"id":42} (/contacts/42; version read: ${VERSION} (its version column); written only if the row still has it)`,
      );
      expect(lines).toContain('    email: "ada@example.com" → "ada@lovelace.example"');
      expect(lines).toContain('    score: "12.50" → "13.00"');
      expect(lines.find((l) => l.startsWith("    unchanged: "))).toBe("    unchanged: id, name, big, active, born, seen_at, tags, avatar, ref");
      const proposed = result.structuredContent as Proposed;
      expect(proposed.preview).toEqual([
        expect.objectContaining({
          kind: "postgres.row",
          target: "crmdb",
          path: "/contacts/42",
          op: "update",
          table: "contacts",
          key: { id: 42 },
          version: VERSION,
          precondition: "version",
          before: expect.objectContaining({ email: "ada@example.com", score: "12.50" }),
          after: expect.objectContaining({ email: "ada@lovelace.example", score: "13.00" }),
        }),
      ]);
      // get_plan renders the same preview.
      const got = await call("get_plan", { planId: proposed.id });
      expect(text(got)).toContain('    email: "ada@example.com" → "ada@lovelace.example"');
      expect((got.structuredContent as { actions: unknown[] }).actions).toEqual(proposed.preview);
      expect(await db.writes()).toBe(writes);
      expect(await contact(42)).toEqual({ email: "ada@example.com", score: "12.50" });
    });

    it("an insert is shown from no row, a delete to none, beside an http.json action in the same plan", async () => {
      const result = await call(
        "propose_plan",
        proposal([
          row({ op: "insert", key: { id: 44 }, values: { name: "Edsger", email: "ewd@example.com" } }),
          row({ op: "delete", key: { id: 43 }, values: undefined }),
          { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } },
        ]),
      );
      expect(result.isError, text(result)).toBeFalsy();
      const lines = text(result).split("\n");
      expect(lines).toContain('  0. insert crmdb table contacts key {"id":44} (/contacts/44; no row there now: written only if it is still absent)');
      expect(lines).toContain('    name: (no row) → "Edsger"');
      expect(lines).toContain("    id: (no row) → 44");
      expect(lines).toContain(
        `  1. delete crmdb table contacts key {"id":43} (/contacts/43; version read: ${VERSION} (its version column); written only if the row still has it)`,
      );
      expect(lines).toContain('    email: "grace@example.com" → (no row)');
      expect(lines.some((l) => l.startsWith("  2. merge crm /contacts/1 (version read: "))).toBe(true);
      expect(lines).toContain('    /email: "ana@old.example" → "ana@new.example"');
    });

    it("the server's refusals of a row are tool errors naming the column; malformed rows are refused before the server", async () => {
      const typed = await call("propose_plan", proposal([row({ values: { score: 12.5 } })]));
      expect(typed.isError).toBe(true);
      expect(text(typed)).toMatch(/^preview_failed: .*column 'score' \(numeric\(10,2\)\) takes a decimal string/);
      expect((typed.structuredContent as { error: { code: string } }).error.code).toBe("preview_failed");

      const table = await call("propose_plan", proposal([row({ table: "notes", key: { id: 1 } })]));
      expect(text(table)).toMatch(/^policy_denied: /);
      expect(text(table)).toContain("table 'notes' is not one agents may change on 'crmdb'");

      const wrongKind = await call(
        "propose_plan",
        proposal([{ kind: "http.json", target: "crmdb", path: "/contacts/42", op: "merge", body: { email: "x@y" } }]),
      );
      expect(text(wrongKind)).toMatch(/^unknown_target: actions\[0\] is a http.json action, but target 'crmdb' is a postgres.row target/);

      // The tool's own schema (the plan schema's) refuses these; the server never sees them.
      const noValues = await call("propose_plan", proposal([row({ values: undefined })]));
      expect(noValues.isError).toBe(true);
      expect(text(noValues)).toContain("op 'update' needs values");
      const unknownKind = await call("propose_plan", proposal([{ ...row(), kind: "mysql.row" }]));
      expect(unknownKind.isError).toBe(true);
      expect(text(unknownKind)).toContain("known kinds: 'http.json', 'postgres.row'");
      const twice = await call("propose_plan", proposal([row(), row({ values: { name: "Ada L." } })]));
      expect(text(twice)).toContain("action 1 writes crmdb contacts");
    });

    it("wait_for_outcome: approved, the executor writes the row once and says it verified it", async () => {
      const writes = await db.writes();
      const proposed = (await call("propose_plan", proposal([row()]))).structuredContent as Proposed;
      const waiting = call("wait_for_outcome", { planId: proposed.id, timeoutSeconds: 90 }, 100_000);
      await approve(proposed);
      const result = await waiting;
      expect(result.structuredContent).toMatchObject({
        planId: proposed.id,
        status: "applied",
        final: true,
        results: [{ target: "crmdb", path: "/contacts/42", status: "applied", verified: true }],
      });
      expect(text(result)).toContain("  0. crmdb /contacts/42: applied, verified");
      expect(await contact(42)).toMatchObject({ email: "ada@lovelace.example" });
      expect(await db.writes()).toBe(writes + 1);
    });

    it("wait_for_outcome: a row changed after the preview is stale, with the versions and the columns that moved", async () => {
      const proposed = (await call("propose_plan", proposal([row()]))).structuredContent as Proposed;
      await db.admin`UPDATE contacts SET name = 'Ada K.', updated_at = '2026-12-03 09:30:00+00' WHERE id = 42`;
      const writes = await db.writes();
      // The Approve re-reads the row: refused, and the plan is stale before any executor sees it.
      await expect(approve(proposed)).rejects.toMatchObject({ code: "target_changed" });
      const result = await call("wait_for_outcome", { planId: proposed.id, timeoutSeconds: 30 }, 60_000);
      expect(result.structuredContent).toMatchObject({ planId: proposed.id, status: "stale", final: true });
      const out = text(result);
      expect(out).toContain("The target changed after the preview; nothing was written.");
      expect(out).toContain(`version expected ${VERSION}, found 2026-12-03 09:30:00+00`);
      expect(out).toContain('changed since the preview: /name: "Ada" → "Ada K."');
      expect(await db.writes()).toBe(writes);
    });
  });

  describe("the OpenAI Agents tool", () => {
    const parameters = z.object({ contactId: z.int().min(0), email: z.string() });
    let client: Countersign;
    const proposed: PlanView[] = [];
    beforeAll(() => {
      client = new (class extends Countersign {
        override async submitPlan(...args: Parameters<Countersign["submitPlan"]>): Promise<PlanView> {
          const plan = await super.submitPlan(...args);
          proposed.push(plan);
          return plan;
        }
      })({ url: s.server.url, key });
    });
    const makeTool = (values: (email: string) => PostgresRowAction["values"] = (email) => ({ email })) =>
      countersignTool({
        client,
        name: "update_contact_email",
        description: "Change a contact's email address in the CRM database.",
        parameters,
        toPlan: ({ contactId, email }) => ({
          title: `Update the email of contact ${contactId}`,
          onBehalfOf: "U0REQUESTER",
          actions: [row({ key: { id: contactId }, values: values(email) })],
        }),
      });
    const invoke = (tool: ReturnType<typeof makeTool>, args: object) => {
      const before = proposed.length;
      return { result: tool.invoke(new RunContext(), JSON.stringify(args)), proposed: waitFor("the proposal", () => proposed[before]) };
    };

    it('approved → the executor writes the row → "applied"; rejected → nothing written', async () => {
      const applied = invoke(makeTool(), { contactId: 42, email: "ada@tool.example" });
      const plan = await applied.proposed;
      expect(plan.plan.actions[0]).toMatchObject({ kind: "postgres.row", table: "contacts", precondition: { version: VERSION } });
      await approve(plan);
      expect(await applied.result).toBe("applied");
      expect(await contact(42)).toMatchObject({ email: "ada@tool.example" });

      const writes = await db.writes();
      const rejected = invoke(makeTool(), { contactId: 43, email: "grace@tool.example" });
      await reject(await rejected.proposed, "wrong contact");
      expect(await rejected.result).toBe("rejected: wrong contact");
      expect(await contact(43)).toMatchObject({ email: "grace@example.com" });
      expect(await db.writes()).toBe(writes);
    });

    it('a value its column cannot hold → "refused: preview_failed: …" naming the column, and no plan', async () => {
      const before = proposed.length;
      const result = await makeTool(() => ({ score: 12.5 })).invoke(new RunContext(), JSON.stringify({ contactId: 42, email: "x" }));
      expect(result).toMatch(/^refused: preview_failed: .*column 'score'/);
      expect(proposed.length).toBe(before);
    });
  });

  describe("the typed client", () => {
    it("submits a postgres.row action typed by its kind, and reads the row's preview", async () => {
      const client = new Countersign({ url: s.server.url, key });
      const action: ActionRequestInput = { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 43 }, op: "update", values: { score: "8.25" } };
      // @ts-expect-error: a postgres.row action has no http.json op
      const wrongOp: ActionRequestInput = { ...action, op: "merge" };
      // @ts-expect-error: nor an http.json path
      const withPath: ActionRequestInput = { ...action, path: "/contacts/43" };
      expect([wrongOp.op, "path" in withPath]).toEqual(["merge", true]);

      const plan = await client.submitPlan({ title: "Raise Grace's score", actions: [action] });
      const planned = plan.plan.actions[0]!;
      if (planned.kind !== "postgres.row") throw new Error(`expected a postgres.row action, got ${planned.kind}`);
      // Narrowed by kind: the row's own fields are typed.
      expect({ table: planned.table, key: planned.key, values: planned.values, precondition: planned.precondition }).toEqual({
        table: "contacts",
        key: { id: 43 },
        values: { score: "8.25" },
        precondition: { version: VERSION },
      });
      expect(plan.preview.actions[0]).toMatchObject({
        op: "update",
        version: VERSION,
        precondition: "version",
        changes: [{ path: "/score", from: "7.00", to: "8.25" }],
      });

      const refused = await client.submitPlan({ title: "x", actions: [{ ...action, key: { id: 43, name: "Grace" } }] }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(CountersignError);
      expect(refused).toMatchObject({ code: "preview_failed", status: 422, details: { target: "crmdb" } });
      expect((refused as Error).message).toContain("is found by its key (id)");
      await client.cancel(plan.id);
    });
  });
});
