import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AdapterError, TargetReader, TargetWriter } from "../../../src/adapters/adapter.ts";
import { postgresRowAdapter } from "../../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget, type PostgresRowAction, type PostgresRowPlanned } from "../../../src/plan/postgres-row-schema.ts";
import { PlanRequest } from "../../../src/plan/schema.ts";
import { openRowDatabase, openRowTarget, type RowDatabase } from "../../support/adapters-postgres.ts";
import { postgresKind } from "../../support/databases.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
const adapter = postgresRowAdapter();

describe.skipIf(!postgresKind || !adminUrl)("postgres.row: one row, one path; versions and constraints (lost answers: postgres-row-sessions.test.ts)", () => {
  let db: RowDatabase;
  let target: PostgresRowTarget;
  let reader: TargetReader<PostgresRowAction, PostgresRowPlanned>;
  let writer: TargetWriter<PostgresRowPlanned>;
  let closeTarget: (() => Promise<void>) | undefined;
  const writeRole = () => decodeURIComponent(new URL(db.writeUrl).username);
  const action = (a: Omit<PostgresRowAction, "kind" | "target">): PostgresRowAction => ({ kind: "postgres.row", target: "crmdb", ...a });
  const refusal = (a: Omit<PostgresRowAction, "kind" | "target">) =>
    reader.preview(action(a)).then(
      () => "previewed",
      (err: AdapterError) => err,
    );

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    const readRole = decodeURIComponent(new URL(db.readUrl).username);
    await db.admin.unsafe(`
      CREATE TABLE ledger (id int8 PRIMARY KEY, note text);
      CREATE TABLE prices (amount numeric PRIMARY KEY, label text);
      CREATE TABLE scaled (amount numeric(10,2) PRIMARY KEY, label text);
      CREATE TABLE stamps (at timestamptz PRIMARY KEY, label text);
      CREATE TABLE docs (doc jsonb PRIMARY KEY, body text);
      CREATE TABLE people (id int4 PRIMARY KEY, email text CONSTRAINT people_email_unique UNIQUE, name text, version int4);
      GRANT SELECT ON ledger, prices, scaled, stamps, docs, people TO ${readRole};
      GRANT SELECT, INSERT, UPDATE, DELETE ON ledger, prices, scaled, stamps, docs, people TO ${writeRole()};`);
    ({
      target,
      reader,
      writer,
      close: closeTarget,
    } = openRowTarget(
      db,
      {
        ledger: { key: ["id"] },
        prices: { key: ["amount"] },
        scaled: { key: ["amount"] },
        stamps: { key: ["at"] },
        docs: { key: ["doc"] },
        people: { key: ["id"], version: "version" },
      },
      2000,
    ));
  });
  afterAll(async () => {
    await closeTarget?.();
    await db?.close();
  });
  beforeEach(async () => {
    await db.admin.unsafe(`
      DELETE FROM ledger; DELETE FROM prices; DELETE FROM scaled; DELETE FROM stamps; DELETE FROM people;
      INSERT INTO ledger VALUES (0, 'zero'); INSERT INTO prices VALUES (1, 'one'); INSERT INTO scaled VALUES (1, 'one');
      INSERT INTO stamps VALUES ('2026-12-04 00:00:00+00', 'midnight');
      INSERT INTO people VALUES (1, 'ada@example.com', 'Ada', 1), (2, 'bob@example.com', 'Bob', NULL);`);
  });

  it("a key in another form of the same value is refused, naming the one form; the standard form has one path", async () => {
    const update = (table: string, key: PostgresRowAction["key"]) =>
      refusal({ table, key, op: "update", values: { [table === "ledger" ? "note" : "label"]: "x" } });
    expect(String(await update("ledger", { id: "-0" }))).toContain(`key column 'id' (bigint): "-0" is written "0" there; send a key in that one form`);
    expect(String(await update("prices", { amount: "1.0" }))).toContain(`key column 'amount' (numeric): "1.0" is written "1" there`);
    expect(String(await update("prices", { amount: "-0.00" }))).toContain(`key column 'amount' (numeric): "-0.00" is written "0" there`);
    expect(String(await update("scaled", { amount: "1" }))).toContain(`key column 'amount' (numeric(10,2)): "1" is written "1.00" there`);
    expect(String(await update("stamps", { at: "2026-12-03T24:00:00.000000Z" }))).toContain(
      `"2026-12-03T24:00:00.000000Z" is written "2026-12-04T00:00:00.000000Z" there`,
    );
    for (const [table, key] of [
      ["ledger", { id: "0" }],
      ["prices", { amount: "1" }],
      ["scaled", { amount: "1.00" }],
      ["stamps", { at: "2026-12-04T00:00:00.000000Z" }],
    ] as const) {
      const { planned } = await reader.preview(action({ table, key, op: "update", values: { [table === "ledger" ? "note" : "label"]: "y" } }));
      expect(planned.path).toBe(adapter.address("crmdb", target, action({ table, key, op: "update", values: {} })).path);
    }
    // Keys sent in their one form: two actions on one row are one resource to the plan's duplicate check.
    const plan = PlanRequest.safeParse({
      title: "twice",
      actions: [
        action({ table: "ledger", key: { id: "0" }, op: "update", values: { note: "a" } }),
        action({ table: "ledger", key: { id: "0" }, op: "delete" }),
      ],
    });
    expect(plan.success).toBe(false);
    expect(plan.error?.issues[0]?.message).toContain("action 1 writes crmdb ledger");
  });

  it("a jsonb key column is refused when the table is read, saying why", async () => {
    const err = await refusal({ table: "docs", key: { doc: 1 }, op: "delete" });
    expect(String(err)).toContain("key column 'doc' of public.docs is jsonb, which cannot be a postgres.row key");
    expect(adapter.classify(err)).toBe("permanent");
  });

  it("a row whose version column holds NULL is refused at preview naming the column (422, not a 500 on the planned schema)", async () => {
    const err = await refusal({ table: "people", key: { id: 2 }, op: "update", values: { name: "Robert" } });
    expect(String(err)).toContain("the row at /people/2 on 'crmdb' has NULL in its version column 'version'");
    expect((err as AdapterError).path).toBe("/people/2");
    expect(adapter.classify(err)).toBe("permanent");
  });

  it("an insert that hits another unique constraint is failed (permanent) naming it, not stale", async () => {
    const { planned } = await reader.preview(
      action({ table: "people", key: { id: 3 }, op: "insert", values: { email: "ada@example.com", name: "Ada again" } }),
    );
    const result = await writer.apply(planned, "k");
    expect(result).toMatchObject({ status: "failed", errorClass: "permanent" });
    expect(result.status === "failed" && result.detail).toMatch(/^insert \/people\/3 on 'crmdb' was refused: .*people_email_unique/);
    // The key itself taken meanwhile is still the precondition: stale, nothing written.
    const other = await reader.preview(action({ table: "people", key: { id: 4 }, op: "insert", values: { email: "eve@example.com" } }));
    await db.admin`INSERT INTO people VALUES (4, 'someone@example.com', 'Someone', 1)`;
    expect(await writer.apply(other.planned, "k")).toMatchObject({ status: "stale" });
  });
});
