import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import { listChanges } from "../../plan/changes.ts";
import { fingerprint } from "../../plan/fingerprint.ts";
import { afterApplyMismatches } from "../../plan/holds-change.ts";
import type { Json, JsonObject } from "../../plan/json.ts";
import { AdapterError, type Revalidation, NOTHING_ALLOWED, type Adapter, type AdapterApplyResult, type ErrorClass, type TargetState } from "../adapter.ts";
import { formOf, fromText, quoteIdent, readExpr, toText, UnreadableValue, whyNotForm, writeExpr, type Column } from "./column-types.ts";
import { postgresRowRefusals } from "../../policy/allowlist.ts";
import { PostgresRowAction, PostgresRowPlanned, PostgresRowTarget, urlQueryProblems, type PostgresRowTable } from "../../plan/postgres-row-schema.ts";

type Sql = postgres.Sql;

/**
 * `postgres.row`: one row of a configured table, found by its key columns, updated,
 * inserted or deleted only if its version is still the one previewed. Identifiers come from the
 * config and must exist in the catalogue; every value is a parameter. No SQL from an agent runs.
 */
export function postgresRowAdapter(): Adapter<PostgresRowAction, PostgresRowPlanned, PostgresRowTarget> {
  return {
    kind: "postgres.row",
    actionSchema: PostgresRowAction,
    plannedSchema: PostgresRowPlanned,
    targetSchema: PostgresRowTarget,
    address: (name, target, action) => ({ op: action.op, path: rowPath(name, target, action.table, action.key) }),
    refusals: postgresRowRefusals,
    openReader(name, target) {
      // A read-only session as well as a read-only role: a misconfigured role still cannot write here.
      const sql = connect(name, target.read.url, target.timeoutMs, true);
      const tables = new TableCache(sql, name, target);
      const readRow = async (planned: PostgresRowPlanned): Promise<TargetState> => {
        const state = await readState(sql, await tables.get(planned.table), planned.key);
        return state.exists ? { exists: true, body: state.body, version: state.version } : state;
      };
      const seenRow = (state: TargetState) => (state.exists ? state.body : undefined);
      return {
        preview: (action) => guard(name, () => preview(sql, name, target, tables, action)),
        read: (planned) => guard(name, () => readRow(planned)),
        revalidate: async (planned, seen) => judgeRow(planned, seen, await guard(name, () => readRow(planned))),
        async verify(planned, seen) {
          const current = await guard(name, () => readRow(planned));
          const mismatches = afterApplyMismatches(seen.before, seen.after, seenRow(current));
          return mismatches.length === 0 ? { verified: true } : { verified: false, mismatches };
        },
        close: () => sql.end({ timeout: 5 }),
      };
    },
    openWriter(name, target) {
      if (!target.write) {
        return {
          timeoutMs: target.timeoutMs,
          apply: async () => ({ status: "failed", errorClass: "permanent", detail: `target '${name}' has no write connection configured` }),
          close: async () => {},
        };
      }
      const sql = connect(name, target.write.url, target.timeoutMs, false);
      const writer: Writer = { sql, name, timeoutMs: target.timeoutMs, tables: new TableCache(sql, name, target), pidsTrusted: undefined };
      return {
        timeoutMs: target.timeoutMs,
        apply: (planned, _key, deadline) => apply(writer, planned, deadline ?? Number.POSITIVE_INFINITY),
        close: () => sql.end({ timeout: 5 }),
      };
    },
    classify: classifyPostgresError,
    judge: judgeRow,
    describe: (name, target) => ({
      reaches: `PostgreSQL, ${Object.keys(target.tables).length} table(s)`,
      lines: [
        ...Object.entries(target.tables).map(
          ([table, t]) =>
            `table ${t.schema}.${table}: rows found by (${t.key.join(", ")}); version ${t.version ? `'${t.version}' (set by ${t.versionSetBy === "trigger" ? "a trigger" : "Countersign on every write"})` : "xmin (no version column: weaker, a dump and restore changes it)"} (targets.${name}.tables.${table})`,
        ),
        target.allow ? `may propose: ops ${target.allow.ops.join(", ")} on tables ${target.allow.tables.join(", ")} (targets.${name}.allow)` : NOTHING_ALLOWED,
      ],
    }),
  };
}

/** Held when the row already has the change; ready while its version is the one previewed (text to text); else stale. */
function judgeRow(planned: PostgresRowPlanned, seen: { before: Json | null; after: Json | null }, current: TargetState): Revalidation {
  const row = current.exists ? current.body : undefined;
  if (afterApplyMismatches(seen.before, seen.after, row).length === 0) return { state: "held" };
  const now = current.exists ? current.version : null;
  const expected = "version" in planned.precondition ? planned.precondition.version : null;
  if (now === expected) return { state: "ready" };
  return { state: "stale", expected, now, changedSincePreview: listChanges(seen.before ?? undefined, row).slice(0, 200) };
}

function connect(name: string, url: string, timeoutMs: number, readOnly: boolean): Sql {
  // The config schema refuses these at load; a target built another way is refused here too.
  const problems = urlQueryProblems(url);
  if (problems.length > 0) throw new AdapterError("permanent", name, `target '${name}': ${problems.join("; ")}`);
  return postgres(url, {
    max: 2,
    onnotice: () => {},
    connect_timeout: Math.ceil(timeoutMs / 1000),
    idle_timeout: 30,
    // Text forms of versions and dates must not depend on the role's settings.
    connection: {
      TimeZone: "UTC",
      DateStyle: "ISO",
      statement_timeout: timeoutMs,
      application_name: "countersign postgres.row",
      ...(readOnly ? { default_transaction_read_only: true } : {}),
    },
  });
}

/**
 * A write whose answer is lost is settled only once its session has ended (docs/adapters.md, "A
 * write whose answer is lost"): its statement is bounded by statement_timeout, but its commit is
 * not (PostgreSQL stops the timer before committing; a synchronous standby or a slow disk can
 * hold a commit up). The session is waited for this long past the target's timeoutMs, then
 * ended with pg_terminate_backend; after that, this long again for it to go.
 */
const ORPHAN_LIMIT_MS = 5000;
/** How often pg_stat_activity is looked at while the session of a lost write is waited for. */
const ORPHAN_POLL_MS = 100;
/**
 * Without a backend to wait for (a pooler between, which announces a pid that is not the
 * server's), how long past statement_timeout a lost write is given: the old bound, which covers the
 * statement and not a commit held up.
 */
const ORPHAN_MARGIN_MS = 1000;
/**
 * Kept between the end of a write bounded by the time left and the deadline (the answer's and the
 * commit's way back). A write with less than LANDING_MARGIN_MS + MIN_WRITE_MS left is not sent.
 */
const LANDING_MARGIN_MS = 100;
const MIN_WRITE_MS = 50;

/**
 * Why a key value sent is not the one form the database reads back for it (`canonical`, from the
 * preview's SELECT): "-0" for 0, "1" for a numeric(10,2)'s "1.00", a T24:00 time, base64 with
 * stray bits. Unconstrained numeric keeps the scale it is given ("1.0" is "1.0"), so there
 * trailing zeros are refused too. Each row then has one path, and two actions on it are caught.
 */
function whyNotStandardKey(column: Column, sent: Json, canonical: Json): string | undefined {
  const text = toText(column, sent);
  const want = toText(column, canonical);
  const unconstrained = column.type === "numeric" && column.declared === "numeric" && typeof want === "string" && /\.\d*0$/.test(want);
  if (text === want && !unconstrained) return undefined;
  const standard = unconstrained ? want!.replace(/0+$/, "").replace(/\.$/, "") : want;
  return `key column '${column.name}' (${column.declared}): ${JSON.stringify(sent).slice(0, 60)} is written ${JSON.stringify(standard)} there; send a key in that one form, so one row has one path`;
}

/** `/<table>/<key values in key order>`, each value percent-encoded: what allowlists, risk and outcomes see. */
function rowPath(name: string, target: PostgresRowTarget, table: string, key: Record<string, Json>): string {
  const config = tableConfig(name, target, table);
  const given = Object.keys(key).sort();
  const wanted = [...config.key].sort();
  if (given.join("\u0000") !== wanted.join("\u0000")) {
    throw new AdapterError(
      "permanent",
      name,
      `table '${table}' of target '${name}' is found by its key (${config.key.join(", ")}); the action gives ${given.join(", ") || "no key"}`,
    );
  }
  return `/${table}/${config.key.map((column) => encodeURIComponent(String(key[column]))).join("/")}`;
}

function tableConfig(name: string, target: PostgresRowTarget, table: string): PostgresRowTable {
  if (!Object.hasOwn(target.tables, table)) {
    throw new AdapterError("permanent", name, `target '${name}' has no table '${table.slice(0, 63)}' (it addresses: ${Object.keys(target.tables).join(", ")})`);
  }
  return target.tables[table]!;
}

/** A configured table as the catalogue describes it. */
interface Table {
  name: string;
  config: PostgresRowTable;
  qualified: string;
  columns: Map<string, Column>;
  /** Columns the row document shows: supported types, without the version column. */
  shown: Column[];
  keyColumns: Column[];
  version: { column: Column; kind: "counter" | "timestamp" } | undefined;
}

/** Catalogue reads, once per table per reader/writer: a column change needs a restart, as a config change does. */
class TableCache {
  private readonly tables = new Map<string, Promise<Table>>();
  constructor(
    private readonly sql: Sql,
    private readonly name: string,
    private readonly target: PostgresRowTarget,
  ) {}

  get(table: string): Promise<Table> {
    let found = this.tables.get(table);
    if (!found) {
      found = describeTable(this.sql, this.name, table, tableConfig(this.name, this.target, table));
      found.catch(() => this.tables.delete(table));
      this.tables.set(table, found);
    }
    return found;
  }
}

async function describeTable(sql: Sql, name: string, table: string, config: PostgresRowTable): Promise<Table> {
  const qualified = `${quoteIdent(config.schema)}.${quoteIdent(table)}`;
  const rows = await sql.unsafe<
    { name: string; type: string; typtype: string; declared: string; not_null: boolean; has_default: boolean; database_set: boolean }[]
  >(
    `SELECT a.attname AS name, t.typname AS type, t.typtype AS typtype, format_type(a.atttypid, a.atttypmod) AS declared,
            a.attnotnull AS not_null, a.atthasdef AS has_default, (a.attgenerated <> '' OR a.attidentity = 'a') AS database_set
       FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [config.schema, table],
  );
  if (rows.length === 0)
    throw new AdapterError("permanent", name, `target '${name}': table ${config.schema}.${table} does not exist or this role cannot see it`);
  const columns = new Map<string, Column>(
    rows.map((r) => [
      r.name,
      {
        name: r.name,
        type: r.typtype === "b" ? r.type : `${r.type} (not a base type)`,
        declared: r.declared,
        notNull: r.not_null,
        hasDefault: r.has_default,
        databaseSet: r.database_set,
      },
    ]),
  );
  const find = (column: string, role: string) => {
    const found = columns.get(column);
    if (!found) throw new AdapterError("permanent", name, `target '${name}': ${role} column '${column}' is not a column of ${config.schema}.${table}`);
    return found;
  };
  const keyColumns = config.key.map((k) => find(k, "key"));
  for (const column of keyColumns) {
    if (!formOf(column))
      throw new AdapterError(
        "permanent",
        name,
        `target '${name}': key column '${column.name}' has type ${column.declared}, which postgres.row does not support`,
      );
    // One row must have one path: jsonb has no single text per value (1 and "1" would share a path, key order and spacing vary).
    if (formOf(column) === "json")
      throw new AdapterError(
        "permanent",
        name,
        `target '${name}': key column '${column.name}' of ${config.schema}.${table} is ${column.declared}, which cannot be a postgres.row key (one row could be named in several ways); key it by another unique column`,
      );
  }
  const unique = await sql.unsafe<{ ok: boolean }[]>(
    `SELECT EXISTS (
       SELECT 1 FROM pg_index i
        WHERE i.indrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND i.indisunique AND i.indimmediate AND i.indpred IS NULL AND i.indexprs IS NULL
          AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)) = $3::text[]) AS ok`,
    [config.schema, table, [...config.key].sort()],
  );
  if (!unique[0]?.ok)
    throw new AdapterError(
      "permanent",
      name,
      `target '${name}': the key (${config.key.join(", ")}) of ${config.schema}.${table} is not a primary key or unique index (not deferrable), so it may find more than one row`,
    );
  let version: Table["version"];
  if (config.version) {
    const column = find(config.version, "version");
    const kind = ["int2", "int4", "int8"].includes(column.type) ? "counter" : column.type === "timestamptz" ? "timestamp" : undefined;
    if (!kind)
      throw new AdapterError(
        "permanent",
        name,
        `target '${name}': version column '${column.name}' is ${column.declared}; it must be an integer counter or a timestamptz`,
      );
    version = { column, kind };
  }
  const shown = [...columns.values()].filter((c) => formOf(c) && c.name !== config.version);
  return { name: table, config, qualified, columns, shown, keyColumns, version };
}

/** `WHERE k1 = $n … ` for the key, with its parameters numbered from `first`. */
function whereKey(table: Table, key: Record<string, Json>, first: number): { sql: string; params: (string | null)[] } {
  const parts = table.keyColumns.map((c, i) => `${quoteIdent(c.name)} = ${writeExpr(c, first + i)}`);
  return { sql: parts.join(" AND "), params: table.keyColumns.map((c) => toText(c, key[c.name]!)) };
}

function versionExpr(table: Table): string {
  return table.version ? `${quoteIdent(table.version.column.name)}::text` : "xmin::text";
}

/** A row as read, with its jsonb columns that hold the JSON value null: that reads as null, as SQL NULL does. */
type RowState = { exists: true; body: JsonObject; version: string | null; jsonNull: string[] } | { exists: false };

async function readState(sql: Sql, table: Table, key: Record<string, Json>): Promise<RowState> {
  const where = whereKey(table, key, 1);
  const select = table.shown
    .map((c, i) => `${readExpr(c)} AS c${i}`)
    .concat(`${versionExpr(table)} AS v`)
    .join(", ");
  const rows = await sql.unsafe<Record<string, string | null>[]>(`SELECT ${select} FROM ${table.qualified} WHERE ${where.sql}`, where.params);
  const row = rows[0];
  if (!row) return { exists: false };
  const body: JsonObject = {};
  table.shown.forEach((c, i) => {
    body[c.name] = fromText(c, row[`c${i}`] ?? null);
  });
  const jsonNull = table.shown.filter((c, i) => formOf(c) === "json" && row[`c${i}`] === "null").map((c) => c.name);
  return { exists: true, body, version: row.v ?? null, jsonNull };
}

/**
 * Each value in its canonical form as the column will hold it, computed by the database with
 * the read role (a SELECT of casts, no table touched). A value the column would change
 * (a varchar cut short, a numeric rounded) or refuse (a date that does not exist) names the column.
 */
async function canonical(sql: Sql, name: string, columns: Column[], values: Record<string, Json>): Promise<Record<string, Json>> {
  if (columns.length === 0) return {};
  const select = (list: Column[]) =>
    `SELECT ${list
      .map((c, i) => {
        const typed = writeExpr(c, i + 1);
        return `${readExpr(c, `(${typed})`)} AS c${i}, (${typed}) IS NOT DISTINCT FROM (${writeExpr(c, i + 1, c.type)}) AS e${i}`;
      })
      .join(", ")}`;
  const run = async (list: Column[]) =>
    (
      await sql.unsafe<Record<string, string | boolean | null>[]>(
        select(list),
        list.map((c) => toText(c, values[c.name]!)),
      )
    )[0]!;
  let row: Record<string, string | boolean | null>;
  try {
    row = await run(columns);
  } catch (err) {
    if (!isServerError(err)) throw err;
    // One cast failed the whole SELECT: find which, so the refusal names its column.
    for (const c of columns) {
      await run([c]).catch((one: unknown) => {
        throw isServerError(one)
          ? new AdapterError("permanent", name, `column '${c.name}' (${c.declared}) cannot hold ${JSON.stringify(values[c.name]).slice(0, 60)}: ${one.message}`)
          : one;
      });
    }
    throw err;
  }
  const out: Record<string, Json> = {};
  for (const [i, c] of columns.entries()) {
    if (row[`e${i}`] !== true)
      throw new AdapterError(
        "permanent",
        name,
        `column '${c.name}' (${c.declared}) would store ${JSON.stringify(values[c.name]).slice(0, 60)} as ${JSON.stringify(row[`c${i}`])}; send a value it holds exactly`,
      );
    out[c.name] = fromText(c, row[`c${i}`] as string | null);
  }
  return out;
}

async function preview(sql: Sql, name: string, target: PostgresRowTarget, tables: TableCache, action: PostgresRowAction) {
  const path = rowPath(name, target, action.table, action.key);
  const table = await tables.get(action.table);
  const fail = (message: string) => new AdapterError("permanent", name, message, path);
  const values = action.values ?? {};
  const valueColumns: Column[] = [];
  for (const [column, value] of Object.entries(values)) {
    const c = table.columns.get(column);
    if (!c) throw fail(`table '${table.name}' has no column '${column.slice(0, 63)}'`);
    if (table.config.key.includes(column))
      throw fail(`column '${column}' is part of the key of '${table.name}'; ${action.op === "insert" ? "give it in key" : "a row's key is not changed"}`);
    if (column === table.config.version)
      throw fail(
        `column '${column}' is the version of '${table.name}'; ${table.config.versionSetBy === "trigger" ? "its trigger sets it" : "Countersign sets it on every write"}`,
      );
    if (c.databaseSet) throw fail(`column '${column}' of '${table.name}' is set by the database (generated or identity ALWAYS)`);
    const why = whyNotForm(c, value);
    if (why) throw fail(why);
    valueColumns.push(c);
  }
  for (const c of table.keyColumns) {
    const why = whyNotForm(c, action.key[c.name]!);
    if (why) throw fail(`key ${why}`);
  }
  // Key and value columns are disjoint (a key column is refused in values): one SELECT for both.
  const both = await canonical(sql, name, [...table.keyColumns, ...valueColumns], { ...values, ...action.key });
  const key = Object.fromEntries(table.keyColumns.map((c) => [c.name, both[c.name]!]));
  const set = Object.fromEntries(valueColumns.map((c) => [c.name, both[c.name]!]));
  // The path (allowlists, risk, duplicate actions, outcomes) is built from the key as sent: only the one form the database reads back is taken.
  for (const c of table.keyColumns) {
    const sent = action.key[c.name]!;
    const why = whyNotStandardKey(c, sent, key[c.name]!);
    if (why) throw fail(why);
  }
  if (action.op === "insert") {
    const given = new Set([
      ...Object.keys(key),
      ...Object.keys(set),
      ...(table.version && table.config.versionSetBy === "countersign" ? [table.version.column.name] : []),
    ]);
    const missing = [...table.columns.values()].filter((c) => c.notNull && !c.hasDefault && !c.databaseSet && !given.has(c.name)).map((c) => c.name);
    if (missing.length > 0) throw fail(`insert into '${table.name}' needs ${missing.map((m) => `'${m}'`).join(", ")} (NOT NULL without a default)`);
  }

  const state = await readState(sql, table, key);
  if (action.op === "insert" && state.exists)
    throw fail(`'insert' expects no row at ${path} on '${name}', but one exists (version ${state.version}); use 'update'`);
  if (action.op !== "insert" && !state.exists) throw fail(`target '${name}' has no row at ${path}; use op 'insert' to make it`);
  if (state.exists && state.version === null) {
    throw fail(
      `the row at ${path} on '${name}' has NULL in its version column '${table.version!.column.name}', so a later write could not be told from this state; give the row a version (or make the column NOT NULL with a default)`,
    );
  }
  // A value null is written as SQL NULL: over the JSON value null that change would show as none.
  const hidden = state.exists ? state.jsonNull.find((column) => Object.hasOwn(set, column) && set[column] === null) : undefined;
  if (hidden)
    throw fail(
      `column '${hidden}' of the row at ${path} holds the JSON value null, which reads as null just as SQL NULL does, so setting it to null (SQL NULL) would be a change the preview cannot show`,
    );
  const before = state.exists ? state.body : null;
  const after: Json | null = action.op === "delete" ? null : action.op === "insert" ? { ...key, ...set } : { ...(before as JsonObject), ...set };
  const planned: PostgresRowPlanned = {
    kind: "postgres.row",
    target: action.target,
    path,
    table: table.name,
    op: action.op,
    key,
    ...(action.op === "delete" ? {} : { values: set }),
    precondition: state.exists ? { version: state.version! } : { absent: true },
    beforeDigest: fingerprint(before),
    afterDigest: fingerprint(after),
  };
  return {
    planned,
    preview: {
      target: action.target,
      path,
      op: action.op,
      before,
      after,
      version: state.exists ? state.version : null,
      precondition: !state.exists ? "absent" : table.version ? "version" : "xmin",
      changes: listChanges(before ?? undefined, after ?? undefined),
    },
  };
}

/** The one statement that applies a planned action, conditional on the version previewed. */
function applyStatement(name: string, table: Table, planned: PostgresRowPlanned): { text: string; params: (string | null)[] } {
  // The plan was checked at preview; the table may have changed since (a column dropped, a key redefined).
  const keyNames = Object.keys(planned.key).sort().join(", ");
  if (keyNames !== [...table.config.key].sort().join(", "))
    throw new AdapterError(
      "permanent",
      name,
      `table '${table.name}' is now found by (${table.config.key.join(", ")}), the plan by (${keyNames})`,
      planned.path,
    );
  const values = Object.entries(planned.values ?? {}).map(([column, value]) => {
    const found = table.columns.get(column);
    const why = !found
      ? `table '${table.name}' has no column '${column}' any more`
      : table.config.key.includes(column) || column === table.config.version || found.databaseSet
        ? `column '${column}' cannot be written`
        : whyNotForm(found, value);
    if (why) throw new AdapterError("permanent", name, why, planned.path);
    return { column: found!, value };
  });
  const setsVersion = table.version && table.config.versionSetBy === "countersign" ? table.version : undefined;
  if (planned.op === "insert") {
    const columns = [...table.keyColumns.map((c) => ({ column: c, value: planned.key[c.name]! })), ...values];
    const names = columns.map((c) => quoteIdent(c.column.name));
    const exprs = columns.map((c, i) => writeExpr(c.column, i + 1));
    if (setsVersion) {
      names.push(quoteIdent(setsVersion.column.name));
      exprs.push(setsVersion.kind === "counter" ? "1" : "clock_timestamp()");
    }
    // Still absent: a row with this key makes it insert nothing. Another unique constraint is not
    // the precondition: it fails the statement, naming the constraint (permanent, as a write refused).
    const conflict = table.keyColumns.map((c) => quoteIdent(c.name)).join(", ");
    return {
      text: `INSERT INTO ${table.qualified} (${names.join(", ")}) VALUES (${exprs.join(", ")}) ON CONFLICT (${conflict}) DO NOTHING RETURNING 1`,
      params: columns.map((c) => toText(c.column, c.value)),
    };
  }
  const version = "version" in planned.precondition ? planned.precondition.version : "";
  if (planned.op === "delete") {
    const where = whereKey(table, planned.key, 1);
    return {
      text: `DELETE FROM ${table.qualified} WHERE ${where.sql} AND ${versionExpr(table)} = $${where.params.length + 1}::text RETURNING 1`,
      params: [...where.params, version],
    };
  }
  const sets = values.map((v, i) => `${quoteIdent(v.column.name)} = ${writeExpr(v.column, i + 1)}`);
  if (setsVersion) {
    const v = quoteIdent(setsVersion.column.name);
    // A timestamp version moves even when two writes land in the same microsecond.
    sets.push(`${v} = ${setsVersion.kind === "counter" ? `${v} + 1` : `greatest(clock_timestamp(), ${v} + interval '1 microsecond')`}`);
  }
  const where = whereKey(table, planned.key, values.length + 1);
  const params = [...values.map((v) => toText(v.column, v.value)), ...where.params, version];
  return {
    text: `UPDATE ${table.qualified} SET ${sets.join(", ")} WHERE ${where.sql} AND ${versionExpr(table)} = $${params.length}::text RETURNING 1`,
    params,
  };
}

/** A target's write side: its pool, and whether its connections' announced pids are the server's. */
interface Writer {
  sql: Sql;
  name: string;
  timeoutMs: number;
  tables: TableCache;
  /** Checked once, on the first write: a pooler in between announces pids of its own. */
  pidsTrusted: Promise<boolean> | undefined;
}

async function apply(writer: Writer, planned: PostgresRowPlanned, deadline: number): Promise<AdapterApplyResult> {
  const { sql, name, tables, timeoutMs } = writer;
  const what = `${planned.op} ${planned.path} on '${name}'`;
  let table: Table;
  try {
    table = await tables.get(planned.table);
  } catch (err) {
    return {
      status: "failed",
      errorClass: classifyPostgresError(err),
      detail: `could not describe table '${planned.table}' on '${name}': ${(err as Error).message}`,
    };
  }
  let statement: ReturnType<typeof applyStatement>;
  try {
    statement = applyStatement(name, table, planned);
  } catch (err) {
    return { status: "failed", errorClass: "permanent", detail: `${what} was not sent: ${(err as Error).message}` };
  }
  // The connection is opened (or found open) before the time left is read: a reconnect
  // (connect_timeout is about timeoutMs) and the catalogue reads above can use up the grant.
  let conn: postgres.ReservedSql;
  try {
    conn = await sql.reserve();
  } catch (err) {
    return { status: "failed", errorClass: classifyPostgresError(err), detail: `${what} was not sent: could not connect (${(err as Error).message})` };
  }
  // Given back to the pool only while it still works: postgres.js would take a connection
  // released after it closed for an open one.
  const release = (err?: unknown) => (err === undefined || isServerError(err)) && conn.release();
  let trusted: boolean;
  try {
    trusted = await (writer.pidsTrusted ??= pidsAreTheServers(conn).catch((err: unknown) => {
      writer.pidsTrusted = undefined;
      throw err;
    }));
  } catch (err) {
    release(err);
    return { status: "failed", errorClass: classifyPostgresError(err), detail: `${what} was not sent: ${(err as Error).message}` };
  }
  const left = Math.floor(deadline - performance.now());
  const limit = left - LANDING_MARGIN_MS;
  if (limit < MIN_WRITE_MS) {
    release();
    return {
      status: "expired",
      detail: `${what} was not sent: ${left <= 0 ? "the deadline had passed" : `${left} ms were left before the deadline`} when the connection was ready, too little for the write to land before it`,
    };
  }
  const sent: Sent & { capped?: number } =
    limit < timeoutMs ? { ...(await writeCapped(conn, statement, limit)), capped: limit } : await writeOnce(conn, statement);
  release("err" in sent ? sent.err : undefined);
  if ("err" in sent) {
    const { err } = sent;
    if (isServerError(err)) {
      const constraint = (err as { constraint_name?: unknown }).constraint_name;
      const names = typeof constraint === "string" && !err.message.includes(constraint) ? ` (constraint ${constraint})` : "";
      const bound =
        sent.capped !== undefined && err.code === "57014"
          ? ` (its statement_timeout was cut to ${sent.capped} ms, the time left before the deadline; nothing was written)`
          : "";
      return { status: "failed", errorClass: classifyPostgresError(err), detail: `${what} was refused: ${err.message}${names}${bound}` };
    }
    // postgres.js sets a query's backend when it writes it to a connection: none, it was never sent.
    if (sent.pid === null)
      return { status: "failed", errorClass: "transient", detail: `${what} was not sent: its connection closed first (${(err as Error).message})` };
    return {
      status: "uncertain",
      detail: `${what} got no answer (${(err as Error).message}); the write may or may not have happened, and ${await orphanSettled(writer, trusted, sent.pid)}`,
    };
  }
  if (sent.rows > 0) return { status: "applied" };
  // Nothing matched: someone moved the row, or an earlier attempt (a crash, a retry) already wrote it.
  let current: TargetState;
  try {
    current = await readState(sql, table, planned.key);
  } catch (err) {
    return { status: "uncertain", detail: `${what} matched no row, and the row could not be re-read: ${(err as Error).message}` };
  }
  const after: Json | null = planned.op === "delete" ? null : { ...planned.key, ...(planned.values ?? {}) };
  if (afterApplyMismatches(null, after, current.exists ? current.body : undefined).length === 0) {
    return { status: "applied", reconciled: true, detail: `${planned.path} on '${name}' already holds the change; nothing was written` };
  }
  const now = current.exists ? `version ${current.version}` : "no row";
  const expected = "version" in planned.precondition ? `version ${planned.precondition.version}` : "no row";
  return {
    status: "stale",
    detail: `target '${name}' refused ${planned.op} ${planned.path}: it changed since the preview (expected ${expected}, found ${now})`,
  };
}

type Statement = ReturnType<typeof applyStatement>;
type Sent = { rows: number } | { err: unknown; pid: number | null };

/**
 * The pid the server announced when the query's connection opened (BackendKeyData, what
 * pg_backend_pid() answers there). Read as soon as the query settles: postgres.js reuses the
 * object for the slot's next connection.
 */
function announcedPid(query: object): number | null {
  const pid = ((query as { state?: unknown }).state as { pid?: unknown } | null | undefined)?.pid;
  return typeof pid === "number" ? pid : null;
}

/** Whether the pid a connection announces is its server backend's; a pooler between announces its own. */
async function pidsAreTheServers(conn: postgres.ReservedSql): Promise<boolean> {
  const query = conn.unsafe<{ pid: number }[]>("SELECT pg_backend_pid() AS pid");
  const rows = await query;
  return rows[0]?.pid === announcedPid(query);
}

/** One statement outside BEGIN is its own transaction: one round trip instead of three. */
async function writeOnce(conn: postgres.ReservedSql, statement: Statement): Promise<Sent> {
  const query = conn.unsafe(statement.text, statement.params);
  try {
    return { rows: (await query).length };
  } catch (err) {
    return { err, pid: announcedPid(query) };
  }
}

/**
 * The write with less than the target's timeoutMs left before the deadline: BEGIN, SET LOCAL
 * statement_timeout to what is left, the statement, COMMIT, sent together (one round trip, and a
 * second when the statement is new on the connection). An error in the statement makes the COMMIT
 * a rollback.
 */
async function writeCapped(conn: postgres.ReservedSql, statement: Statement, limitMs: number): Promise<Sent> {
  const queries = [
    conn.unsafe("BEGIN"),
    conn.unsafe(`SET LOCAL statement_timeout = ${Math.floor(limitMs)}`),
    conn.unsafe(statement.text, statement.params),
    conn.unsafe("COMMIT"),
  ];
  for (const query of queries) query.execute();
  const settled = await Promise.allSettled(queries);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) return { err: failed.reason, pid: announcedPid(queries[0]!) };
  return { rows: (settled[2] as PromiseFulfilledResult<unknown[]>).value.length };
}

/**
 * After a write lost its answer: waits until its session is gone from pg_stat_activity (or idle), so the
 * executor's re-read sees the write's final result (committed or not), and says how that went.
 * The session is told apart from a later one given the same pid by its backend_start. Past
 * timeoutMs + ORPHAN_LIMIT_MS it is ended with pg_terminate_backend (the write role may end its
 * own sessions); if it cannot be, the answer says the write may still land.
 */
async function orphanSettled(writer: Writer, trusted: boolean, pid: number): Promise<string> {
  const { sql, timeoutMs } = writer;
  const started = performance.now();
  const waited = () => Math.round(performance.now() - started);
  if (!trusted) {
    await sleep(timeoutMs + ORPHAN_MARGIN_MS);
    return `its server session could not be found (a connection pooler between announces pids of its own), so the session's statement_timeout (${timeoutMs} ms) was waited out and ${ORPHAN_MARGIN_MS} ms more; a commit held up longer (a synchronous standby, a slow disk) could still land after the re-read`;
  }
  let backendStart: string | undefined;
  let lastError: unknown;
  const gone = async (until: number): Promise<boolean> => {
    for (;;) {
      try {
        // Idle: its transaction is over and it waits for a command that will not come (the drop
        // unseen by the server, as in a network partition, until TCP keepalives end it).
        const rows = await sql.unsafe<{ started: string; state: string | null }[]>(
          "SELECT backend_start::text AS started, state FROM pg_stat_activity WHERE pid = $1",
          [pid],
        );
        if (!rows[0] || (backendStart !== undefined && rows[0].started !== backendStart) || rows[0].state === "idle") return true;
        backendStart = rows[0].started;
      } catch (err) {
        lastError = err;
      }
      if (performance.now() + ORPHAN_POLL_MS > until) return false;
      await sleep(ORPHAN_POLL_MS);
    }
  };
  if (await gone(started + timeoutMs + ORPHAN_LIMIT_MS))
    return `its session (backend pid ${pid}) was waited for until it ended or went idle (${waited()} ms), so the re-read sees whether it was written`;
  const stillThere = `its session (backend pid ${pid}) was still there after ${waited()} ms`;
  if (backendStart === undefined)
    return `its session (backend pid ${pid}) could not be looked up for ${waited()} ms (${(lastError as Error | undefined)?.message ?? "no answer"}); the write may still land after the re-read`;
  let why: string;
  try {
    const rows = await sql.unsafe<{ ended: boolean }[]>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE pid = $1 AND backend_start::text = $2",
      [pid, backendStart],
    );
    if (!rows[0]) return `its session (backend pid ${pid}) ended after ${waited()} ms, so the re-read sees whether it was written`;
    why = rows[0].ended ? "" : "pg_terminate_backend answered false";
  } catch (err) {
    why = `pg_terminate_backend was refused: ${(err as Error).message}`;
  }
  if (why === "" && (await gone(performance.now() + ORPHAN_LIMIT_MS)))
    return `${stillThere} and was ended (pg_terminate_backend), after ${waited()} ms in all, so the re-read sees whether it was written`;
  return `${stillThere}${why ? ` and could not be ended (${why})` : ", was told to end and had not"}; the write may still land after the re-read`;
}

async function guard<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof AdapterError) throw err;
    throw new AdapterError(classifyPostgresError(err), name, `target '${name}': ${(err as Error).message}`, undefined, { cause: err });
  }
}

/** An error the server sent (it has a SQLSTATE), as opposed to a connection that failed. */
function isServerError(err: unknown): err is Error & { code: string } {
  return (
    err instanceof Error &&
    typeof (err as { code?: unknown }).code === "string" &&
    /^[0-9A-Z]{5}$/.test((err as unknown as { code: string }).code) &&
    "severity" in err
  );
}

/** SQLSTATE classes and codes that a later attempt can get past. */
const TRANSIENT_SQLSTATE = /^(08|53|57P0[123]|40001|40P01|55P03|57014)/;

export function classifyPostgresError(err: unknown): ErrorClass {
  if (err instanceof AdapterError) return err.errorClass;
  if (err instanceof UnreadableValue) return "permanent";
  if (isServerError(err)) return TRANSIENT_SQLSTATE.test(err.code) ? "transient" : "permanent";
  // No SQLSTATE: the connection failed (refused, reset, timed out, closed).
  return "transient";
}
