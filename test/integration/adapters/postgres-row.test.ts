import postgres from "postgres";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AdapterError, type TargetReader, type TargetWriter } from "../../../src/adapters/adapter.ts";
import { postgresRowAdapter } from "../../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget, type PostgresRowAction, type PostgresRowPlanned } from "../../../src/plan/postgres-row-schema.ts";
import { openRowDatabase, openRowTarget, type RowDatabase } from "../../support/adapters-postgres.ts";
import { postgresKind } from "../../support/databases.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
const adapter = postgresRowAdapter();

describe.skipIf(!postgresKind || !adminUrl)("postgres.row on PostgreSQL with real roles", () => {
  let db: RowDatabase;
  let target: PostgresRowTarget;
  let reader: TargetReader<PostgresRowAction, PostgresRowPlanned>;
  let writer: TargetWriter<PostgresRowPlanned>;
  let closeTarget: (() => Promise<void>) | undefined;
  const action = (a: Omit<PostgresRowAction, "kind" | "target">): PostgresRowAction => ({ kind: "postgres.row", target: "crmdb", ...a });
  const refusal = (a: Omit<PostgresRowAction, "kind" | "target">) =>
    reader.preview(action(a)).then(
      () => "previewed",
      (err: AdapterError) => err,
    );

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    ({
      target,
      reader,
      writer,
      close: closeTarget,
    } = openRowTarget(
      db,
      {
        contacts: { key: ["id"], version: "updated_at" },
        accounts: { key: ["id", "region"], version: "version" },
        notes: { key: ["id"] },
        tasks: { key: ["id"], version: "updated_at", versionSetBy: "trigger" },
      },
      10_000,
    ));
  });
  afterAll(async () => {
    await closeTarget?.();
    await db?.close();
  });
  beforeEach(async () => {
    await db.admin.unsafe(`
      DELETE FROM contacts; DELETE FROM accounts; DELETE FROM notes; DELETE FROM tasks;
      INSERT INTO tasks (id, title) VALUES (1, 'write docs');
      INSERT INTO contacts (id, name, email, score, big, born, seen_at, tags, avatar, ref, location, updated_at)
        VALUES (42, 'Ada', 'ada@example.com', 12.5, 9007199254740993, '1815-12-10', '2026-12-03 10:00:00.123456+00',
                '{"vip": true}', '\\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '(1,2)', '2026-12-03 09:00:00.000001+00');
      INSERT INTO accounts (id, region, balance) VALUES (7, 'eu', 100);
      INSERT INTO notes (id, body) VALUES (1, 'first');`);
  });

  it("reads each column in its one JSON form, and the version as text with its microseconds", async () => {
    const { preview } = await reader.preview(action({ table: "contacts", key: { id: 42 }, op: "update", values: { name: "Ada Lovelace" } }));
    expect(preview.before).toEqual({
      id: 42,
      name: "Ada",
      email: "ada@example.com",
      score: "12.50",
      big: "9007199254740993",
      active: true,
      born: "1815-12-10",
      seen_at: "2026-12-03T10:00:00.123456Z",
      tags: { vip: true },
      avatar: "AP8Q",
      ref: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    });
    // location (point) is not a supported type: not shown, not writable; updated_at is the version.
    expect(preview.version).toBe("2026-12-03 09:00:00.000001+00");
    expect(preview).toMatchObject({
      path: "/contacts/42",
      op: "update",
      precondition: "version",
      changes: [{ path: "/name", from: "Ada", to: "Ada Lovelace" }],
    });
  });

  it("previews with the SELECT-only role, which cannot write, and nothing is written", async () => {
    const asReader = postgres(db.readUrl, { onnotice: () => {}, max: 1 });
    try {
      await expect(asReader`UPDATE contacts SET name = 'x' WHERE id = 42`).rejects.toThrow(/permission denied/);
    } finally {
      await asReader.end({ timeout: 5 });
    }
    const before = await db.writes();
    await reader.preview(
      action({
        table: "contacts",
        key: { id: 42 },
        op: "update",
        values: { score: "99.95", big: "-9223372036854775808", seen_at: "2027-01-01T00:00:00.000001Z", avatar: "3q2+7w==", tags: { a: [1, 2] } },
      }),
    );
    await reader.preview(action({ table: "notes", key: { id: 2 }, op: "insert", values: { body: "second" } }));
    await reader.preview(action({ table: "accounts", key: { id: "7", region: "eu" }, op: "delete" }));
    expect(await db.writes()).toBe(before);
  });

  it("writes every form and reads it back as previewed (verified)", async () => {
    const values = {
      score: "99.95",
      big: "-9223372036854775808",
      seen_at: "2027-01-01T00:00:00.000001Z",
      avatar: "3q2+7w==",
      tags: { a: [1, 2] },
      active: false,
      born: "2000-02-29",
      ref: "00000000-0000-4000-8000-000000000000",
      email: null,
    };
    const { planned, preview } = await reader.preview(action({ table: "contacts", key: { id: 42 }, op: "update", values }));
    expect(await writer.apply(planned, "k")).toEqual({ status: "applied" });
    expect(await reader.verify(planned, preview)).toEqual({ verified: true });
    const [row] =
      await db.admin`SELECT encode(avatar, 'hex') AS avatar, big::text AS big, seen_at = '2027-01-01T00:00:00.000001Z' AS same, updated_at > '2026-12-03 09:00:00.000001+00' AS moved FROM contacts WHERE id = 42`;
    expect(row).toEqual({ avatar: "deadbeef", big: "-9223372036854775808", same: true, moved: true });
  });

  it("refuses a value of the wrong form or one the column would change, naming the column", async () => {
    const update = (values: PostgresRowAction["values"]) => refusal({ table: "contacts", key: { id: 42 }, op: "update", values });
    expect(String(await update({ score: 12.5 }))).toContain("column 'score' (numeric(10,2)) takes a decimal string");
    expect(String(await update({ big: 42 }))).toContain("column 'big' (bigint) takes a decimal string such as \"42\"");
    expect(String(await update({ seen_at: "2026-12-03T10:00:00Z" }))).toContain("column 'seen_at'");
    expect(String(await update({ score: "1.234" }))).toMatch(/column 'score' \(numeric\(10,2\)\) would store "1.234" as "1.23"/);
    expect(String(await update({ email: "x".repeat(41) }))).toContain("column 'email' (character varying(40)) would store");
    expect(String(await update({ born: "2026-02-30" }))).toMatch(/column 'born' \(date\) cannot hold "2026-02-30": date\/time field value out of range/);
    expect(String(await update({ name: null }))).toContain("column 'name' is NOT NULL");
    expect(String(await update({ location: "(3,4)" }))).toContain("column 'location' has type point, which postgres.row does not read or write");
    expect(String(await update({ updated_at: "2026-12-03T10:00:00.000000Z" }))).toContain("column 'updated_at' is the version of 'contacts'");
    expect(String(await update({ id: 43 }))).toContain("column 'id' is part of the key");
    expect(String(await refusal({ table: "notes", key: { id: 3 }, op: "insert", values: {} }))).toBe("previewed");
    expect(String(await refusal({ table: "contacts", key: { id: 43 }, op: "insert", values: { email: "x@y" } }))).toContain(
      "insert into 'contacts' needs 'name'",
    );
  });

  it("a concurrent writer between preview and apply makes it stale with zero writes", async () => {
    const { planned, preview } = await reader.preview(action({ table: "accounts", key: { id: "7", region: "eu" }, op: "update", values: { balance: "250" } }));
    expect(preview).toMatchObject({ path: "/accounts/7/eu", version: "1", precondition: "version" });
    await db.admin`UPDATE accounts SET balance = 90, version = version + 1`;
    const writes = await db.writes();
    const result = await writer.apply(planned, "k");
    expect(result).toMatchObject({ status: "stale" });
    expect(result.status === "stale" && result.detail).toContain("expected version 1, found version 2");
    expect(await db.writes()).toBe(writes);
    expect(await reader.revalidate(planned, preview)).toMatchObject({
      state: "stale",
      expected: "1",
      now: "2",
      changedSincePreview: [{ path: "/balance", from: "100", to: "90" }],
    });
  });

  it("sets a counter version itself; an apply repeated after a crash is applied and reconciled with no second write", async () => {
    const { planned } = await reader.preview(action({ table: "accounts", key: { id: "7", region: "eu" }, op: "update", values: { balance: "250" } }));
    const writes = await db.writes();
    expect(await writer.apply(planned, "k")).toEqual({ status: "applied" });
    expect(await writer.apply(planned, "k")).toMatchObject({ status: "applied", reconciled: true });
    expect(await db.writes()).toBe(writes + 1);
    expect(await db.admin`SELECT balance::text, version FROM accounts`).toEqual([{ balance: "250", version: 2 }]);
  });

  it("leaves a version to the table's trigger when told, and starts a counter at 1 on insert", async () => {
    expect(String(await refusal({ table: "tasks", key: { id: 1 }, op: "update", values: { updated_at: "2026-12-03T10:00:00.000000Z" } }))).toContain(
      "column 'updated_at' is the version of 'tasks'; its trigger sets it",
    );
    const { planned, preview } = await reader.preview(action({ table: "tasks", key: { id: 1 }, op: "update", values: { title: "write the docs" } }));
    expect(await writer.apply(planned, "k")).toEqual({ status: "applied" });
    const [after] = await db.admin<{ v: string }[]>`SELECT updated_at::text AS v FROM tasks`;
    expect(after!.v).not.toBe(preview.version);
    expect(await reader.revalidate(planned, preview)).toEqual({ state: "held" });

    const insert = await reader.preview(action({ table: "accounts", key: { id: "8", region: "us" }, op: "insert", values: { balance: "0.10" } }));
    expect(await writer.apply(insert.planned, "k")).toEqual({ status: "applied" });
    expect(await db.admin`SELECT balance::text, version FROM accounts WHERE id = 8`).toEqual([{ balance: "0.10", version: 1 }]);
  });

  it("inserts only while the row is absent, and deletes by xmin when the table has no version column", async () => {
    const insert = await reader.preview(action({ table: "notes", key: { id: 2 }, op: "insert", values: { body: "second" } }));
    expect(insert.preview).toMatchObject({ before: null, after: { id: 2, body: "second" }, version: null, precondition: "absent" });
    expect(await writer.apply(insert.planned, "k")).toEqual({ status: "applied" });
    expect(await writer.apply(insert.planned, "k")).toMatchObject({ status: "applied", reconciled: true });

    const other = await reader.preview(action({ table: "notes", key: { id: 3 }, op: "insert", values: { body: "mine" } }));
    await db.admin`INSERT INTO notes VALUES (3, 'theirs')`;
    expect(await writer.apply(other.planned, "k")).toMatchObject({ status: "stale" });

    const del = await reader.preview(action({ table: "notes", key: { id: 1 }, op: "delete" }));
    expect(del.preview).toMatchObject({ precondition: "xmin", after: null });
    expect(del.preview.version).toMatch(/^\d+$/);
    expect(await writer.apply(del.planned, "k")).toEqual({ status: "applied" });
    expect(await writer.apply(del.planned, "k")).toMatchObject({ status: "applied", reconciled: true });
    expect(await db.admin`SELECT id FROM notes ORDER BY id`).toEqual([{ id: 2 }, { id: 3 }]);
  });

  it("injection in table names, key columns, key values and values is refused or inert", async () => {
    const writes = await db.writes();
    expect(() => adapter.address("crmdb", target, action({ table: 'contacts"; DROP TABLE contacts; --', key: { id: 1 }, op: "delete" }))).toThrow(
      /has no table 'contacts"; DROP TABLE/,
    );
    expect(String(await refusal({ table: "pg_authid", key: { id: 1 }, op: "delete" }))).toContain("has no table 'pg_authid'");
    expect(String(await refusal({ table: "contacts", key: { 'id" OR 1=1 --': 1 }, op: "delete" }))).toContain("is found by its key (id)");
    expect(String(await refusal({ table: "contacts", key: { id: "42 OR 1=1" }, op: "delete" }))).toContain("column 'id' (integer) takes an integer");
    expect(String(await refusal({ table: "accounts", key: { id: "7", region: "eu' OR '1'='1" }, op: "delete" }))).toContain(
      "has no row at /accounts/7/eu'%20OR%20'1'%3D'1",
    );
    expect(String(await refusal({ table: "contacts", key: { id: 42 }, op: "update", values: { 'name" = now(), "email': "x" } }))).toContain(
      "has no column 'name\" = now(), \"email'",
    );
    expect(await db.writes()).toBe(writes);
    const payload = "Ada'); DROP TABLE contacts; --";
    const { planned } = await reader.preview(action({ table: "contacts", key: { id: 42 }, op: "update", values: { name: payload } }));
    expect(await writer.apply(planned, "k")).toEqual({ status: "applied" });
    expect(await db.admin`SELECT name FROM contacts`).toEqual([{ name: payload }]);
  });

  it("a target without a write connection, or a key that is not unique, is refused plainly", async () => {
    const { planned } = await reader.preview(action({ table: "notes", key: { id: 1 }, op: "update", values: { body: "changed" } }));
    expect(await writer.apply({ ...planned, values: { "body\" = 'x', \"id": "y" } }, "k")).toEqual({
      status: "failed",
      errorClass: "permanent",
      detail: `update /notes/1 on 'crmdb' was not sent: table 'notes' has no column 'body" = 'x', "id' any more`,
    });
    expect(await writer.apply({ ...planned, key: { body: "first" } }, "k")).toMatchObject({ status: "failed", errorClass: "permanent" });
    const readOnly = adapter.openWriter("crmdb", { ...target, write: undefined });
    expect(await readOnly.apply({} as PostgresRowPlanned, "k")).toEqual({
      status: "failed",
      errorClass: "permanent",
      detail: "target 'crmdb' has no write connection configured",
    });
    const loose = adapter.openReader("crmdb", PostgresRowTarget.parse({ ...target, tables: { notes: { key: ["body"] } }, allow: undefined }));
    try {
      const err = await loose.preview(action({ table: "notes", key: { body: "first" }, op: "delete" })).catch((e: AdapterError) => e);
      expect(String(err)).toContain("the key (body) of public.notes is not a primary key or unique index");
      expect(adapter.classify(err)).toBe("permanent");
    } finally {
      await loose.close();
    }
  });
});

describe("postgres.row target config", () => {
  it("names an allowed table that is not addressable, and a version column that is a key", () => {
    const result = PostgresRowTarget.safeParse({
      adapter: "postgres.row",
      read: { url: "postgres://r@h/db" },
      tables: { contacts: { key: ["id"], version: "id" } },
      allow: { ops: ["update"], tables: ["contacts", "users"] },
    });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["allow.tables.1", "allow.tables names 'users', which is not in tables (contacts)"],
      ["tables.contacts.version", "the version column cannot be a key column"],
    ]);
    expect(PostgresRowTarget.safeParse({ adapter: "postgres.row", read: { url: "postgres://r@h/db" }, tables: { "a b": { key: ["id"] } } }).success).toBe(
      false,
    );
  });

  it("allow refuses an op or a table it does not list, naming the config key, and everything without allow", () => {
    const target = PostgresRowTarget.parse({
      adapter: "postgres.row",
      read: { url: "postgres://r@h/db" },
      tables: { contacts: { key: ["id"] }, audit: { key: ["id"] } },
      allow: { ops: ["update"], tables: ["contacts"] },
    });
    const on = (op: PostgresRowAction["op"], table: string, index = 0) => ({
      index,
      action: { kind: "postgres.row" as const, target: "crmdb", table, key: { id: 1 }, op },
    });
    expect(adapter.refusals("crmdb", target, [on("update", "contacts")])).toEqual([]);
    expect(adapter.refusals("crmdb", target, [on("update", "contacts"), on("delete", "audit", 1)])).toEqual([
      { rule: "targets.crmdb.allow.ops", path: "/actions/1/op", message: "op 'delete' is not allowed on 'crmdb' (allowed: update)" },
      { rule: "targets.crmdb.allow.tables", path: "/actions/1/table", message: "table 'audit' is not one agents may change on 'crmdb' (allowed: contacts)" },
    ]);
    expect(adapter.refusals("crmdb", { ...target, allow: undefined }, [on("update", "contacts")])).toEqual([
      {
        rule: "targets.crmdb.allow",
        path: "/actions/0/target",
        message: "target 'crmdb' allows no proposals: its config has no 'allow' block (deny by default)",
      },
    ]);
  });
});
