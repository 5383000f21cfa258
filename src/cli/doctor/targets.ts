import type postgres from "postgres";
import { createReadOnlyHttp } from "../../adapters/read-only-http.ts";
import type { ExecutorTarget, ServerTarget } from "../../config/load.ts";
import { bounded, type CheckResult, fail, NETWORK_TIMEOUT_MS, pass } from "./check.ts";

type AnyTarget = ServerTarget | ExecutorTarget;
type RowTarget = Extract<AnyTarget, { adapter: "postgres.row" }>;

/** A GET of the base URL, or a SELECT of each table, with the read credential: never a write. */
export function targetReadable(name: string, target: AnyTarget): Promise<CheckResult> {
  if (target.adapter === "postgres.row") return tablesReadable(name, target);
  const what = `target ${name}: GET ${target.baseUrl}`;
  return bounded(what, `start the target, or fix targets.${name}.baseUrl`, async () => {
    // The server's own read-only client (node:http): GET is the only method it has.
    const answer = await createReadOnlyHttp(undefined, 64 * 1024).get(new URL(target.baseUrl), target.read.headers, NETWORK_TIMEOUT_MS);
    if (answer.status === 401 || answer.status === 403)
      return fail(
        `${what} with the read credential: HTTP ${answer.status}, refused`,
        `fix targets.${name}.read.headers: the target must accept them for reading`,
      );
    if (answer.status >= 500) return fail(`${what}: HTTP ${answer.status}`, "the target itself fails; look at its logs");
    // The base of an API is often no resource (404): reached, and the credential not refused, is what counts.
    return pass(`${what} with the read credential: HTTP ${answer.status}`);
  });
}

function tablesReadable(name: string, target: RowTarget): Promise<CheckResult> {
  const what = `target ${name}: the read role`;
  return bounded(what, `check targets.${name}.read.url and that PostgreSQL runs there`, (signal) =>
    connected(target.read.url, signal, async (sql) => {
      const [{ role }] = await sql<[{ role: string }]>`SELECT current_user AS role`;
      const refused: string[] = [];
      for (const table of tablesOf(target)) {
        try {
          await sql.unsafe(`SELECT 1 FROM ${table.name} LIMIT 1`);
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          if (code === "42501" || code === "42P01" || code === "3F000") refused.push(`${table.name} (${(err as Error).message})`);
          else throw err;
        }
      }
      if (refused.length > 0)
        return fail(
          `${what} "${role}" cannot SELECT ${refused.join(", ")}`,
          `GRANT USAGE on the schema and SELECT on the table to "${role}", or fix targets.${name}.tables`,
        );
      return pass(
        `${what} "${role}" SELECTs ${tablesOf(target)
          .map((t) => t.name)
          .join(", ")}`,
      );
    }),
  );
}

/**
 * The server's read role writes nothing: no INSERT, UPDATE (any column), DELETE or TRUNCATE on
 * any table the target names. Preview code has no write path, but only the role proves it.
 */
export function readRoleWritesNothing(name: string, target: RowTarget): Promise<CheckResult> {
  const what = `target ${name}: the read role's rights`;
  return bounded(what, `check targets.${name}.read.url and that PostgreSQL runs there`, (signal) =>
    connected(target.read.url, signal, async (sql) => {
      const { role, superuser, tables } = await rights(sql, tablesOf(target));
      const writable = tables.flatMap((t) => {
        const ops = WRITES.filter((op) => t.may.has(op));
        return ops.length > 0 ? [{ table: t.name, ops }] : [];
      });
      if (writable.length === 0) return pass(`${what}: "${role}" can write nothing on ${tables.map((t) => t.name).join(", ")}`);
      return fail(
        `${what}: "${role}" may ${writable.map((w) => `${w.ops.join(", ")} ${w.table}`).join("; ")}`,
        superuser
          ? `"${role}" is a superuser; give the server a role that may only SELECT the tables`
          : `${writable.map((w) => `REVOKE ${w.ops.join(", ")} ON ${w.table} FROM ${sqlName(role)};`).join(" ")} The server's read role may only SELECT`,
      );
    }),
  );
}

/**
 * The executor's write role holds exactly what `allow` names: SELECT and each op of allow.ops on
 * each table of allow.tables, and no write on any other table the target names.
 */
export function writeRoleMatchesAllow(name: string, target: Extract<ExecutorTarget, { adapter: "postgres.row" }>): Promise<CheckResult> {
  const what = `target ${name}: the write role's rights`;
  const allowed = new Set(target.allow?.tables ?? []);
  const ops = new Set((target.allow?.ops ?? []).map((op) => OP_PRIVILEGE[op]));
  return bounded(what, `check targets.${name}.write.url and that PostgreSQL runs there`, (signal) =>
    connected(target.write.url, signal, async (sql) => {
      const { role, superuser, tables } = await rights(sql, tablesOf(target));
      const missing: string[] = [];
      const extra: string[] = [];
      const grants: string[] = [];
      const revokes: string[] = [];
      for (const t of tables) {
        const want = allowed.has(t.table) ? new Set<Privilege>(["SELECT", ...ops]) : new Set<Privilege>();
        const lacks = (["SELECT", ...WRITES] as const).filter((p) => want.has(p) && !t.may.has(p));
        const beyond = WRITES.filter((p) => !want.has(p) && t.may.has(p));
        if (lacks.length > 0) {
          missing.push(`${lacks.join(", ")} on ${t.name}`);
          grants.push(`GRANT ${lacks.join(", ")} ON ${t.name} TO ${sqlName(role)};`);
        }
        if (beyond.length > 0) {
          extra.push(`${beyond.join(", ")} on ${t.name}`);
          revokes.push(`REVOKE ${beyond.join(", ")} ON ${t.name} FROM ${sqlName(role)};`);
        }
      }
      const allowedNames = tables
        .filter((t) => allowed.has(t.table))
        .map((t) => t.name)
        .join(", ");
      if (missing.length === 0 && extra.length === 0)
        return pass(
          `${what}: "${role}" holds exactly what targets.${name}.allow names (${[...ops].join(", ") || "no write"} on ${allowedNames || "no table"})`,
        );
      const problems = [
        missing.length > 0 && `lacks ${missing.join("; ")}, which targets.${name}.allow needs`,
        extra.length > 0 && `may also ${extra.join("; ")}, which targets.${name}.allow does not name`,
      ].filter(Boolean);
      return fail(
        `${what}: "${role}" ${problems.join(", and ")}`,
        superuser ? `"${role}" is a superuser; give the executor a role with exactly these rights` : [...grants, ...revokes].join(" "),
      );
    }),
  );
}

type Privilege = "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "TRUNCATE";
const WRITES = ["INSERT", "UPDATE", "DELETE", "TRUNCATE"] as const;
const OP_PRIVILEGE = { insert: "INSERT", update: "UPDATE", delete: "DELETE" } as const;

interface Table {
  table: string;
  schema: string;
  /** `schema.table`, as SQL names it. */
  name: string;
}

function tablesOf(target: RowTarget): Table[] {
  return Object.entries(target.tables).map(([table, t]) => ({
    table,
    schema: t.schema,
    name: `${sqlName(t.schema)}.${sqlName(table)}`,
  }));
}

/**
 * What the connected role may do to each table. INSERT and UPDATE count when granted on any
 * column: a column grant is a write all the same. A table that does not exist is left out (the
 * readability check names it).
 */
async function rights(sql: postgres.Sql, tables: Table[]): Promise<{ role: string; superuser: boolean; tables: (Table & { may: Set<Privilege> })[] }> {
  const rows = await sql<{ role: string; superuser: boolean; i: number; sel: boolean; ins: boolean; upd: boolean; del: boolean; tru: boolean }[]>`
    SELECT current_user AS role, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser, t.i,
           has_table_privilege(c.oid, 'SELECT') AS sel, has_any_column_privilege(c.oid, 'INSERT') AS ins,
           has_any_column_privilege(c.oid, 'UPDATE') AS upd, has_table_privilege(c.oid, 'DELETE') AS del,
           has_table_privilege(c.oid, 'TRUNCATE') AS tru
      FROM unnest(${tables.map((t) => t.schema)}::text[], ${tables.map((t) => t.table)}::text[]) WITH ORDINALITY AS t(schema, name, i)
      JOIN LATERAL (SELECT to_regclass(quote_ident(t.schema) || '.' || quote_ident(t.name))::oid AS oid) c ON c.oid IS NOT NULL`;
  const role = rows[0]?.role ?? (await sql<[{ role: string }]>`SELECT current_user AS role`)[0].role;
  return {
    role,
    superuser: rows[0]?.superuser ?? false,
    tables: rows.map((r) => {
      const may = new Set<Privilege>();
      if (r.sel) may.add("SELECT");
      if (r.ins) may.add("INSERT");
      if (r.upd) may.add("UPDATE");
      if (r.del) may.add("DELETE");
      if (r.tru) may.add("TRUNCATE");
      return { ...tables[Number(r.i) - 1]!, may };
    }),
  };
}

/** One connection, in a read-only session, for as long as `run` takes or until `signal` aborts. */
async function connected<T>(url: string, signal: AbortSignal, run: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const { default: connect } = await import("postgres");
  const sql = connect(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: NETWORK_TIMEOUT_MS / 1000,
    connection: { application_name: "countersign doctor", statement_timeout: NETWORK_TIMEOUT_MS, default_transaction_read_only: true },
  });
  const end = () => void sql.end({ timeout: 1 }).catch(() => {});
  signal.addEventListener("abort", end, { once: true });
  try {
    return await run(sql);
  } finally {
    signal.removeEventListener("abort", end);
    end();
  }
}

/** An identifier as SQL reads it back: plain when it is lower-case, else quoted. */
const sqlName = (name: string) => (/^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`);
