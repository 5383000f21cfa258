import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdapterError, type TargetReader, type TargetWriter } from "../../../src/adapters/adapter.ts";
import { fromText, readExpr, toText, whyNotForm, writeExpr, type Column } from "../../../src/adapters/postgres-row/column-types.ts";
import type { PostgresRowAction, PostgresRowPlanned } from "../../../src/plan/postgres-row-schema.ts";
import type { Json } from "../../../src/plan/json.ts";
import { openRowDatabase, openRowTarget, type RowDatabase } from "../../support/adapters-postgres.ts";
import { postgresKind } from "../../support/databases.ts";

const adminUrl = process.env.TEST_DATABASE_URL;

/** One supported column type and the values at its edges: how each is written in SQL, and its JSON form. */
interface EdgeType {
  type: string;
  declared: string;
  values: [sql: string, form: Json][];
}

const NUMERIC_WIDEST = "9".repeat(131072);
const NUMERIC_FINEST = `0.${"0".repeat(16382)}1`;
const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/** Each list holds values the column stores differently, so each must read in a form of its own. */
const EDGES: EdgeType[] = [
  {
    type: "bool",
    declared: "boolean",
    values: [
      ["true", true],
      ["false", false],
    ],
  },
  {
    type: "int2",
    declared: "smallint",
    values: [
      ["-32768", -32768],
      ["0", 0],
      ["32767", 32767],
    ],
  },
  {
    type: "int4",
    declared: "integer",
    values: [
      ["-2147483648", -2147483648],
      ["0", 0],
      ["2147483647", 2147483647],
    ],
  },
  {
    type: "int8",
    declared: "bigint",
    values: [
      ["-9223372036854775808", "-9223372036854775808"],
      ["0", "0"],
      ["9223372036854775807", "9223372036854775807"],
    ],
  },
  {
    type: "numeric",
    declared: "numeric",
    values: [
      ["0", "0"],
      ["1.0", "1.0"],
      ["1.00", "1.00"],
      ["-1.5", "-1.5"],
      ["NaN", "NaN"],
      ["Infinity", "Infinity"],
      ["-Infinity", "-Infinity"],
      [NUMERIC_WIDEST, NUMERIC_WIDEST],
      [`-${NUMERIC_WIDEST}`, `-${NUMERIC_WIDEST}`],
      [NUMERIC_FINEST, NUMERIC_FINEST],
      ["12345678901234567890.12345678901234567890", "12345678901234567890.12345678901234567890"],
    ],
  },
  {
    type: "numeric",
    declared: "numeric(10,2)",
    values: [
      ["0", "0.00"],
      ["-99999999.99", "-99999999.99"],
      ["99999999.99", "99999999.99"],
      ["1.5", "1.50"],
      ["NaN", "NaN"],
    ],
  },
  {
    type: "text",
    declared: "text",
    values: [
      ["", ""],
      ["null", "null"],
      [' é 👩‍👩‍👧 \n\t\\ "q" \'', ' é 👩‍👩‍👧 \n\t\\ "q" \''],
      ["x".repeat(10_000), "x".repeat(10_000)],
    ],
  },
  {
    type: "varchar",
    declared: "character varying(40)",
    values: [
      ["", ""],
      ["y".repeat(40), "y".repeat(40)],
    ],
  },
  {
    type: "uuid",
    declared: "uuid",
    values: [
      ["00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000"],
      ["FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "ffffffff-ffff-ffff-ffff-ffffffffffff"],
    ],
  },
  {
    type: "date",
    declared: "date",
    values: [
      ["infinity", "infinity"],
      ["-infinity", "-infinity"],
      ["4714-11-24 BC", "4714-11-24 BC"],
      ["0044-03-15 BC", "0044-03-15 BC"],
      ["0001-12-31 BC", "0001-12-31 BC"],
      ["0001-01-01", "0001-01-01"],
      ["2026-12-03", "2026-12-03"],
      ["9999-12-31", "9999-12-31"],
      ["10000-01-01", "10000-01-01"],
      ["5874897-12-31", "5874897-12-31"],
    ],
  },
  {
    type: "timestamptz",
    declared: "timestamp with time zone",
    values: [
      ["infinity", "infinity"],
      ["-infinity", "-infinity"],
      ["4714-11-24 00:00:00+00 BC", "4714-11-24T00:00:00.000000Z BC"],
      ["2026-12-03 10:00:00+00 BC", "2026-12-03T10:00:00.000000Z BC"],
      ["0001-12-31 23:59:59.999999+00 BC", "0001-12-31T23:59:59.999999Z BC"],
      ["0001-01-01 00:00:00+00", "0001-01-01T00:00:00.000000Z"],
      ["1850-06-01 12:00:00+00:19:32", "1850-06-01T11:40:28.000000Z"],
      ["2026-12-03 12:00:00.123456+02", "2026-12-03T10:00:00.123456Z"],
      ["2026-12-03 10:00:00+00", "2026-12-03T10:00:00.000000Z"],
      ["10000-01-01 00:00:00+00", "10000-01-01T00:00:00.000000Z"],
      ["294276-12-31 23:59:59.999999+00", "294276-12-31T23:59:59.999999Z"],
    ],
  },
  {
    type: "jsonb",
    declared: "jsonb",
    values: [
      // Neighbours are never two objects or two arrays, so each change is one line at the column.
      ["{}", {}],
      ["[]", []],
      ['""', ""],
      ['{"a": [1, {"b": null}], "é": "\\u00e9\\n"}', { a: [1, { b: null }], é: "é\n" }],
      ['"null"', "null"],
      ["false", false],
      ["0", 0],
      ["-0.5", -0.5],
      ["1e300", 1e300],
      ["9007199254740991", 9007199254740991],
    ],
  },
  {
    type: "bytea",
    declared: "bytea",
    values: [
      ["\\x", ""],
      ["\\x00ff10", "AP8Q"],
      [`\\x${ALL_BYTES.toString("hex")}`, ALL_BYTES.toString("base64")],
    ],
  },
];

const column = (edge: EdgeType, name = "v"): Column => ({
  name,
  type: edge.type,
  declared: edge.declared,
  notNull: false,
  hasDefault: false,
  databaseSet: false,
});
const label = (value: Json) => JSON.stringify(value).slice(0, 40);

interface Engine {
  name: string;
  skip: boolean;
  /** A session whose DateStyle and TimeZone are not the ones the adapter asks for: the forms must not depend on them. */
  open(): Promise<{ query(text: string, params: (string | null)[]): Promise<Record<string, unknown>[]>; close(): Promise<void> }>;
}

const ODD_SESSION = { DateStyle: "SQL, DMY", TimeZone: "Asia/Kolkata" };

const engines: Engine[] = [
  {
    name: "PGlite",
    skip: false,
    async open() {
      const pg = await PGlite.create();
      await pg.exec(
        Object.entries(ODD_SESSION)
          .map(([k, v]) => `SET ${k} = '${v}';`)
          .join(" "),
      );
      return { query: async (text, params) => (await pg.query<Record<string, unknown>>(text, params)).rows, close: () => pg.close() };
    },
  },
  {
    name: "PostgreSQL",
    skip: !postgresKind || !adminUrl,
    async open() {
      const sql = postgres(adminUrl!, { max: 1, onnotice: () => {}, connection: ODD_SESSION });
      return { query: (text, params) => sql.unsafe<Record<string, unknown>[]>(text, params), close: () => sql.end({ timeout: 5 }) };
    },
  },
];

/**
 * postgres.row's forms at the edges of every supported type: each stored value reads in a form
 * of its own, that form is accepted as a value, and writing it stores the value read (read →
 * write → read is the identity), whatever the session's DateStyle and TimeZone.
 */
describe.each(engines)("postgres.row forms at the edges, on $name", (engine) => {
  let session: Awaited<ReturnType<Engine["open"]>>;
  beforeAll(async () => {
    if (!engine.skip) session = await engine.open();
  });
  afterAll(async () => {
    await session?.close();
  });

  it.skipIf(engine.skip).each(EDGES.map((e) => [e.declared, e] as const))("%s", async (_, edge) => {
    const c = column(edge);
    for (const [stored, form] of edge.values) {
      const [read] = await session.query(`SELECT ${readExpr(c, `($1::text::${edge.declared})`)} AS t`, [stored]);
      expect(fromText(c, read!.t as string), `${edge.declared} ${label(stored)}`).toEqual(form);
      expect(whyNotForm(c, form), `${edge.declared} ${label(form)}`).toBeUndefined();
      const [back] = await session.query(
        `SELECT ${readExpr(c, `(${writeExpr(c, 1)})`)} AS t, (${writeExpr(c, 1)}) IS NOT DISTINCT FROM ($2::text::${edge.declared}) AS same`,
        [toText(c, form), stored],
      );
      expect({ form: fromText(c, back!.t as string), same: back!.same }, `${edge.declared} ${label(form)} written back`).toEqual({ form, same: true });
    }
    const [nothing] = await session.query(`SELECT ${readExpr(c, `($1::text::${edge.declared})`)} AS t`, [null]);
    expect(nothing!.t).toBeNull();
  });
});

/**
 * The same edges through the adapter on PostgreSQL (postgres.row reads its targets over the wire),
 * in a database whose default DateStyle and TimeZone are not ISO and UTC: every stored difference
 * is in the preview's changes, and a write of the form read stores the value it was read from.
 */
describe.skipIf(!postgresKind || !adminUrl)("postgres.row previews at the edges, on PostgreSQL", () => {
  let db: RowDatabase;
  let reader: TargetReader<PostgresRowAction, PostgresRowPlanned>;
  let writer: TargetWriter<PostgresRowPlanned>;
  let closeTarget: (() => Promise<void>) | undefined;
  const columnOf = (i: number) => `c${i}`;
  const update = (id: number, values: Record<string, Json>) =>
    reader.preview({ kind: "postgres.row", target: "crmdb", table: "edge_values", key: { id }, op: "update", values });
  const refusal = (id: number, values: Record<string, Json>) =>
    update(id, values).then(
      () => undefined,
      (err: AdapterError) => err,
    );

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    const role = (url: string) => decodeURIComponent(new URL(url).username);
    const database = new URL(db.readUrl).pathname.slice(1);
    await db.admin.unsafe(`
      CREATE TABLE edge_values (id int4 PRIMARY KEY, version int4 NOT NULL DEFAULT 1, ${EDGES.map((e, i) => `${columnOf(i)} ${e.declared}`).join(", ")});
      GRANT SELECT ON edge_values TO ${role(db.readUrl)};
      GRANT SELECT, UPDATE ON edge_values TO ${role(db.writeUrl)};
      ALTER DATABASE ${database} SET DateStyle = '${ODD_SESSION.DateStyle}';
      ALTER DATABASE ${database} SET TimeZone = '${ODD_SESSION.TimeZone}';`);
    ({
      reader,
      writer,
      close: closeTarget,
    } = openRowTarget(db, { edge_values: { key: ["id"], version: "version" }, contacts: { key: ["id"], version: "updated_at" } }, 10_000));
  });
  afterAll(async () => {
    await closeTarget?.();
    await db?.close();
  });

  it.each(EDGES.map((e, i) => [e.declared, e, i] as const))(
    "%s: each value's change is shown, and writing the form read stores that value",
    async (_, edge, i) => {
      const name = columnOf(i);
      const path = `/${name}`;
      const ids = edge.values.map((__, n) => i * 100 + n);
      for (const [n, [stored]] of edge.values.entries())
        await db.admin.unsafe(`INSERT INTO edge_values (id, ${name}) VALUES ($1, $2::text::${edge.declared})`, [ids[n]!, stored]);

      for (const [n, [, form]] of edge.values.entries()) {
        const what = `${edge.declared} ${label(form)}`;
        const same = await update(ids[n]!, { [name]: form });
        expect(
          { before: (same.preview.before as Record<string, Json>)[name], changes: same.preview.changes, planned: same.planned.values![name] },
          what,
        ).toEqual({ before: form, changes: [], planned: form });
        const other = edge.values[(n + 1) % edge.values.length]![1];
        expect((await update(ids[n]!, { [name]: other })).preview.changes, `${what} to ${label(other)}`).toEqual([{ path, from: form, to: other }]);
        expect((await update(ids[n]!, { [name]: null })).preview.changes, `${what} to null`).toEqual([{ path, from: form, to: null }]);

        expect(await writer.apply(same.planned, "k"), what).toEqual({ status: "applied" });
        expect(await reader.verify(same.planned, same.preview), what).toEqual({ verified: true });
        const [row] = await db.admin.unsafe(`SELECT ${name} IS NOT DISTINCT FROM $2::text::${edge.declared} AS same, version FROM edge_values WHERE id = $1`, [
          ids[n]!,
          edge.values[n]![0],
        ]);
        expect(row, `${what} written back`).toEqual({ same: true, version: 2 });
      }
    },
  );

  it("infinity set to null, and a BC time set to the same-looking AD one, are changes shown, written and verified", async () => {
    await db.admin`INSERT INTO contacts (id, name, seen_at, born) VALUES (900, 'Ada', 'infinity', '0044-03-15 BC')`;
    const { planned, preview } = await reader.preview({
      kind: "postgres.row",
      target: "crmdb",
      table: "contacts",
      key: { id: 900 },
      op: "update",
      values: { seen_at: null, born: "0044-03-15", name: "touched" },
    });
    expect(preview.changes).toEqual([
      { path: "/name", from: "Ada", to: "touched" },
      { path: "/born", from: "0044-03-15 BC", to: "0044-03-15" },
      { path: "/seen_at", from: "infinity", to: null },
    ]);
    expect(await writer.apply(planned, "k")).toEqual({ status: "applied" });
    expect(await reader.verify(planned, preview)).toEqual({ verified: true });
    expect(await db.admin`SELECT seen_at IS NULL AS cleared, born = '0044-03-15' AS ad FROM contacts WHERE id = 900`).toEqual([{ cleared: true, ad: true }]);

    await db.admin`UPDATE contacts SET seen_at = '2026-12-03 10:00:00+00 BC' WHERE id = 900`;
    const bc = await reader.preview({
      kind: "postgres.row",
      target: "crmdb",
      table: "contacts",
      key: { id: 900 },
      op: "update",
      values: { seen_at: "2026-12-03T10:00:00.000000Z" },
    });
    expect(bc.preview.changes).toEqual([{ path: "/seen_at", from: "2026-12-03T10:00:00.000000Z BC", to: "2026-12-03T10:00:00.000000Z" }]);
  });

  it("a value a column cannot hold, or one its form cannot show exactly, is refused naming the column", async () => {
    const money = EDGES.findIndex((e) => e.declared === "numeric(10,2)");
    const json = EDGES.findIndex((e) => e.type === "jsonb");
    const numeric = EDGES.findIndex((e) => e.declared === "numeric");
    await db.admin.unsafe(
      `INSERT INTO edge_values (id, ${columnOf(json)}, ${columnOf(numeric)}) VALUES (5000, 'null', 1), (5001, '{"n": 12345678901234567890}', 1)`,
    );

    expect(String(await refusal(5000, { [columnOf(money)]: "Infinity" }))).toContain(
      `column '${columnOf(money)}' (numeric(10,2)) cannot hold "Infinity": numeric field overflow`,
    );
    for (const bad of ["nan", "+Infinity", "1e3"])
      expect(String(await refusal(5000, { [columnOf(numeric)]: bad }))).toContain(
        `column '${columnOf(numeric)}' (numeric) takes a decimal string such as "12.50", or "NaN", "Infinity", "-Infinity"`,
      );
    // "-0" is 0 in numeric: the preview plans the form the column holds.
    expect((await update(5000, { [columnOf(numeric)]: "-0" })).planned.values).toEqual({ [columnOf(numeric)]: "0" });

    // The JSON value null reads as null, as SQL NULL does: writing SQL NULL over it is refused, other values show the change.
    const hidden = await refusal(5000, { [columnOf(json)]: null });
    expect(hidden).toBeInstanceOf(AdapterError);
    expect(hidden!.message).toContain(
      `column '${columnOf(json)}' of the row at /edge_values/5000 holds the JSON value null, which reads as null just as SQL NULL does`,
    );
    expect((await update(5000, { [columnOf(json)]: { a: 1 } })).preview.changes).toEqual([{ path: `/${columnOf(json)}`, from: null, to: { a: 1 } }]);

    const unshown = await refusal(5001, { [columnOf(numeric)]: "2" });
    expect(unshown).toBeInstanceOf(AdapterError);
    expect(unshown!.errorClass).toBe("permanent");
    expect(unshown!.message).toContain(
      `column '${columnOf(json)}' (jsonb) holds JSON that cannot be shown exactly (at '/n'): the number 12345678901234567890 cannot be held exactly`,
    );
  });
});
