import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PostgresRowTargetConfig } from "../../src/config/schema.ts";
import { fingerprint } from "../../src/plan/fingerprint.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { slackViewOf } from "../../src/service/delivery/slack-messages.ts";
import { reviewPlan } from "../../src/service/review/review-plan.ts";
import { planMessageOf } from "../../src/slack/deliver.ts";
import { renderPlanMessage } from "../../src/slack/render.ts";
import { PlanBody } from "../../src/web/plan-page.tsx";
import { openRowDatabase, type RowDatabase } from "../support/adapters-postgres.ts";
import { pglite, postgresKind } from "../support/databases.ts";
import { APPROVERS, targetConfig, testConfig } from "../support/harness.ts";
import { useServer } from "../support/use-harness.ts";

const adminUrl = process.env.TEST_DATABASE_URL;

interface Answer {
  status: number;
  body: {
    id: string;
    hash: string;
    plan: { actions: Record<string, unknown>[] };
    preview: {
      actions: {
        target: string;
        path: string;
        op: string;
        before: unknown;
        after: unknown;
        version: string | null;
        precondition: string;
        changes: unknown[];
      }[];
    };
    error: { code: string; message: string; issues?: { path: string; message: string }[]; details?: Record<string, unknown> };
  };
}

/**
 * Submitting postgres.row plans through the agent API: the server previews with the
 * target's SELECT-only role (a database of its own on TEST_DATABASE_URL's server, with a trigger
 * that counts every row written), through the adapter registry, beside an http.json target.
 */
describe.skipIf(!postgresKind || !adminUrl)("postgres.row plans over the agent API", () => {
  let db: RowDatabase;
  // Opened before the server (whose config names its roles) and closed after it.
  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
  });
  afterAll(async () => {
    await db?.close();
  });
  const s = useServer(pglite, {
    config: (crmUrl) =>
      testConfig({
        crm: targetConfig(crmUrl),
        crmdb: PostgresRowTargetConfig.parse({
          adapter: "postgres.row",
          read: { url: db.readUrl },
          tables: { contacts: { key: ["id"], version: "updated_at" }, accounts: { key: ["id", "region"], version: "version" }, notes: { key: ["id"] } },
          allow: { ops: ["update", "insert"], tables: ["contacts", "accounts"] },
          watch: { intervalSeconds: 0 },
          timeoutMs: 10_000,
        }),
      }),
  });
  let key: string;
  beforeAll(async () => {
    key = (await addAgent(s.server.ctx, { name: "row-agent" })).key;
  });
  beforeEach(async () => {
    await db.admin.unsafe(`
      DELETE FROM contacts; DELETE FROM accounts; DELETE FROM notes;
      INSERT INTO contacts (id, name, email, score, updated_at) VALUES (42, 'Ada', 'ada@example.com', 12.5, '2026-12-03 09:00:00.000001+00');
      INSERT INTO accounts (id, region, balance) VALUES (7, 'eu', 100);
      INSERT INTO notes (id, body) VALUES (1, 'first');`);
  });

  const submit = async (actions: object[], extra: object = {}): Promise<Answer> => {
    const res = await fetch(`${s.server.url}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "Change a row", onBehalfOf: "U0REQUESTER", actions, ...extra }),
    });
    return { status: res.status, body: (await res.json()) as Answer["body"] };
  };
  const row = (fields: object = {}) => ({
    kind: "postgres.row",
    target: "crmdb",
    table: "contacts",
    key: { id: 42 },
    op: "update",
    values: { email: "ada@lovelace.example" },
    ...fields,
  });
  /** The contacts table as the admin sees it: it must be intact after every refusal. */
  const contacts = () => db.admin<{ id: number; name: string; email: string | null }[]>`SELECT id, name, email FROM contacts ORDER BY id`;

  it("previews with the read role and shows the row before and after, per column, with the version read", async () => {
    const writes = await db.writes();
    const { status, body } = await submit([row({ values: { email: "ada@lovelace.example", score: "13.00" } })]);
    expect(status).toBe(201);
    const [preview] = body.preview.actions;
    expect(preview).toMatchObject({ target: "crmdb", path: "/contacts/42", op: "update", version: "2026-12-03 09:00:00.000001+00", precondition: "version" });
    expect(preview!.before).toMatchObject({ id: 42, name: "Ada", email: "ada@example.com", score: "12.50" });
    expect(preview!.after).toMatchObject({ id: 42, name: "Ada", email: "ada@lovelace.example", score: "13.00" });
    expect(preview!.changes).toEqual([
      { path: "/email", from: "ada@example.com", to: "ada@lovelace.example" },
      { path: "/score", from: "12.50", to: "13.00" },
    ]);
    expect(body.plan.actions[0]).toMatchObject({
      kind: "postgres.row",
      target: "crmdb",
      path: "/contacts/42",
      table: "contacts",
      op: "update",
      key: { id: 42 },
      precondition: { version: "2026-12-03 09:00:00.000001+00" },
    });
    expect(body.hash).toBe(fingerprint(body.plan));
    expect(await db.writes()).toBe(writes);
  });

  it("a time at infinity set to null is a change in the preview, the Slack message and the plan page", async () => {
    await db.admin`UPDATE contacts SET seen_at = 'infinity' WHERE id = 42`;
    const { status, body } = await submit([row({ values: { seen_at: null, name: "touched" } })]);
    expect(status).toBe(201);
    expect(body.preview.actions[0]!.changes).toEqual([
      { path: "/name", from: "Ada", to: "touched" },
      { path: "/seen_at", from: "infinity", to: null },
    ]);
    const slack = renderPlanMessage(planMessageOf((await slackViewOf(s.server.ctx, body.id))!));
    expect(JSON.stringify(slack.blocks)).toContain(JSON.stringify('`/seen_at`: `"infinity"` → `null`').slice(1, -1));
    const page = String(PlanBody({ reviewed: await reviewPlan(s.server.ctx, { planId: body.id, reader: { userId: APPROVERS[0]! } }), session: undefined }));
    expect(page).toContain(
      '<tr><td data-label="Field">/seen_at</td><td class="before" data-label="Before">&quot;infinity&quot;</td><td class="after" data-label="After">null</td></tr>',
    );
  });

  it("takes postgres.row and http.json actions in one plan", async () => {
    const { status, body } = await submit([row(), { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@new.example" } }]);
    expect(status).toBe(201);
    expect(body.preview.actions.map((a) => [a.target, a.path, a.precondition])).toEqual([
      ["crmdb", "/contacts/42", "version"],
      ["crm", "/contacts/1", "etag"],
    ]);
  });

  it("a value of the wrong type for its column is 422 preview_failed naming the column, and nothing is stored or written", async () => {
    const writes = await db.writes();
    const { status, body } = await submit([row({ values: { score: 12.5 } })]);
    expect(status).toBe(422);
    expect(body.error.code).toBe("preview_failed");
    expect(body.error.message).toContain("column 'score' (numeric(10,2)) takes a decimal string");
    expect(body.error.details).toMatchObject({ target: "crmdb", path: "/contacts/42", errorClass: "permanent" });
    expect(body.error.issues).toEqual([{ path: "/actions/0", message: expect.stringContaining("column 'score'") }]);
    const cut = await submit([row({ values: { email: "x".repeat(41) } })]);
    expect({ status: cut.status, code: cut.body.error.code }).toEqual({ status: 422, code: "preview_failed" });
    expect(cut.body.error.message).toContain("column 'email' (character varying(40)) would store");
    expect(await db.writes()).toBe(writes);
  });

  it("a table or op outside allow is refused before any read, naming the config key", async () => {
    const notes = await submit([row({ table: "notes", key: { id: 1 }, values: { body: "x" } })]);
    expect({ status: notes.status, code: notes.body.error.code }).toEqual({ status: 422, code: "policy_denied" });
    expect(notes.body.error.details).toEqual({ rules: ["targets.crmdb.allow.tables"] });
    expect(notes.body.error.issues).toEqual([
      {
        path: "/actions/0/table",
        message: "table 'notes' is not one agents may change on 'crmdb' (allowed: contacts, accounts) (rule targets.crmdb.allow.tables)",
      },
    ]);
    const deletion = await submit([{ ...row({ op: "delete" }), values: undefined }]);
    expect({ status: deletion.status, code: deletion.body.error.code }).toEqual({ status: 422, code: "policy_denied" });
    expect(deletion.body.error.details).toEqual({ rules: ["targets.crmdb.allow.ops"] });
  });

  it("the key must be exactly the table's key columns: anything else is 422 preview_failed naming them", async () => {
    const { status, body } = await submit([row({ table: "accounts", key: { id: 7 }, values: { balance: "1" } })]);
    expect({ status, code: body.error.code }).toEqual({ status: 422, code: "preview_failed" });
    expect(body.error.message).toContain("table 'accounts' of target 'crmdb' is found by its key (id, region); the action gives id");
  });

  it("SQL in a table name, a key or values is inert: refused, or stored as the text it is", async () => {
    const writes = await db.writes();
    const refused: [string, object, number, string, RegExp][] = [
      ["table", row({ table: "contacts; DROP TABLE contacts" }), 422, "policy_denied", /table 'contacts; DROP TABLE contacts' is not one agents may change/],
      ["key value", row({ key: { id: "42 OR 1=1" } }), 422, "preview_failed", /key column 'id'|cannot hold/],
      ["key column", row({ key: { 'id" = 42 OR "id': 1 } }), 422, "preview_failed", /is found by its key \(id\)/],
      ["value column", row({ values: { 'email" = NULL, "name': "x" } }), 422, "preview_failed", /has no column 'email" = NULL, "name'/],
    ];
    for (const [what, action, status, code, message] of refused) {
      const answer = await submit([action]);
      expect({ what, status: answer.status, code: answer.body.error.code }).toEqual({ what, status, code });
      expect(answer.body.error.message).toMatch(message);
    }
    const bobby = "Robert'); DROP TABLE contacts;--";
    const stored = await submit([row({ values: { name: bobby } })]);
    expect(stored.status).toBe(201);
    expect(stored.body.preview.actions[0]!.changes).toEqual([{ path: "/name", from: "Ada", to: bobby }]);
    expect(await contacts()).toEqual([{ id: 42, name: "Ada", email: "ada@example.com" }]);
    expect(await db.writes()).toBe(writes);
  });

  it("an action of another kind than its target's, or of no kind the server has, is 422 naming what there is", async () => {
    const wrong = await submit([{ kind: "http.json", target: "crmdb", path: "/contacts/42", op: "merge", body: { email: "x@y" } }]);
    expect({ status: wrong.status, code: wrong.body.error.code }).toEqual({ status: 422, code: "unknown_target" });
    expect(wrong.body.error.message).toBe("actions[0] is a http.json action, but target 'crmdb' is a postgres.row target; http.json targets: crm");
    const unknown = await submit([row({ kind: "mysql.row" })]);
    expect({ status: unknown.status, code: unknown.body.error.code }).toEqual({ status: 422, code: "unknown_kind" });
    expect(unknown.body.error.details).toEqual({ kinds: ["http.json", "postgres.row"] });
  });

  it("a row whose version column is NULL is 422 preview_failed naming the column (not a 500), and a key not in its one form is 422 naming the form", async () => {
    await db.admin.unsafe(`ALTER TABLE accounts ALTER version DROP NOT NULL; UPDATE accounts SET version = NULL`);
    try {
      const { status, body } = await submit([row({ table: "accounts", key: { id: "7", region: "eu" }, values: { balance: "1" } })]);
      expect({ status, code: body.error.code }).toEqual({ status: 422, code: "preview_failed" });
      expect(body.error.message).toContain("has NULL in its version column 'version'");
      expect(body.error.details).toMatchObject({ target: "crmdb", path: "/accounts/7/eu", errorClass: "permanent" });
    } finally {
      await db.admin.unsafe(`UPDATE accounts SET version = 1; ALTER TABLE accounts ALTER version SET NOT NULL`);
    }
    const negativeZero = await submit([row({ table: "accounts", key: { id: "-0", region: "eu" }, values: { balance: "1" } })]);
    expect({ status: negativeZero.status, code: negativeZero.body.error.code }).toEqual({ status: 422, code: "preview_failed" });
    expect(negativeZero.body.error.message).toContain(`key column 'id' (bigint): "-0" is written "0" there`);
  });

  it("two actions on one row are refused (400) like two on one path", async () => {
    const { status, body } = await submit([row(), row({ values: { name: "Ada L." } })]);
    expect({ status, code: body.error.code }).toEqual({ status: 400, code: "invalid_request" });
    expect(body.error.issues).toEqual([{ path: "/actions/1/key", message: expect.stringContaining("action 1 writes crmdb contacts") }]);
  });
});
