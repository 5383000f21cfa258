import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { quoteIdent } from "../adapters/postgres-row/column-types.ts";
import { databaseStartupError } from "../config/startup-errors.ts";
import { isDatabaseUnreachable } from "../store/database-errors.ts";
import { demoDatabaseNames } from "./postgres-row-demo.ts";

/**
 * The `postgres.row` demo of `countersign start` (issue 17): when DATABASE_URL is set, a database
 * of its own on the same server with a `contacts` table, a role that may only SELECT it and a
 * role that may write it, so a newcomer sees an agent's change to a database row previewed with
 * a credential that cannot write and applied by the executor alone.
 */

export const PG_DEMO_FILE = "demo-postgres.json";

export interface PostgresRowDemo {
  database: string;
  readRole: string;
  writeRole: string;
  readUrl: string;
  writeUrl: string;
}

export type ProvisionResult = { ok: true; demo: PostgresRowDemo } | { ok: false; reason: string };

const SEED = [
  [1, "Ana Lima", "ana@old.example", "gold"],
  [2, "Bruno Costa", "bruno@example.com", "silver"],
  [3, "Carla Dias", "carla@example.com", "bronze"],
] as const;

/**
 * Creates what is missing and resets what may have drifted, on every start: database, roles
 * (their passwords from the data dir), table, trigger, rows that are not there yet (a change that
 * landed stays), and grants. Answers why not when the server's user may not do it (no CREATEDB or
 * CREATEROLE, a role of that name with more rights than a demo role should have); a DATABASE_URL
 * that does not work at all throws the StartupError the server itself would.
 */
export async function provisionPostgresRowDemo(databaseUrl: string, dataDir: string): Promise<ProvisionResult> {
  const names = demoDatabaseNames(databaseUrl);
  const passwords = demoPasswords(dataDir);
  const readUrl = roleUrl(databaseUrl, names.database, names.readRole, passwords.read);
  const writeUrl = roleUrl(databaseUrl, names.database, names.writeRole, passwords.write);
  if (!readUrl || !writeUrl) return { ok: false, reason: "DATABASE_URL names no host, so no URL can name the demo's own roles" };
  const user = decodeURIComponent(new URL(databaseUrl).username) || "(the default user)";
  let step = `connect to "${names.database}"`;
  try {
    // On a restart the demo database is there: one connection does everything (each costs ~50 ms).
    const sql = await connectOrCreate(databaseUrl, names.database, () => (step = `create the database "${names.database}"`));
    try {
      // One start provisions at a time: the role checks below are check-then-create.
      await sql`SELECT pg_advisory_lock(hashtext('countersign postgres.row demo'))`;
      for (const [role, password] of [[names.readRole, passwords.read], [names.writeRole, passwords.write]] as const) {
        step = `create the role "${role}"`;
        const [found] = await sql<{ powerful: boolean }[]>`
          SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls OR rolreplication AS powerful FROM pg_roles WHERE rolname = ${role}`;
        if (found?.powerful) return { ok: false, reason: `a role "${role}" already exists with more rights than a demo role may have (superuser, CREATEROLE, CREATEDB, BYPASSRLS or REPLICATION); drop it or take those away` };
        await sql.unsafe(`${found ? "ALTER" : "CREATE"} ROLE ${quoteIdent(role)} WITH LOGIN ${found ? "" : "NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "}PASSWORD ${literal(password)}`);
      }
      step = `set up the contacts table and its grants in "${names.database}"`;
      await setUpDatabase(sql, names);
    } finally {
      await sql.end({ timeout: 5 });
    }
    return { ok: true, demo: { ...names, readUrl, writeUrl } };
  } catch (err) {
    // A server that cannot be reached is the server's own startup error, said the same way (and not after a second wait).
    if (isDatabaseUnreachable(err)) throw databaseStartupError(err, { kind: "postgres", url: databaseUrl }) ?? err;
    return { ok: false, reason: `could not ${step} as user "${user}": ${messageOf(err)}${codeOf(err) === "42501" ? " (the demo needs a DATABASE_URL user with CREATEDB and CREATEROLE)" : ""}` };
  }
}

/** `start` never waits on the demo for long: a lock someone holds (a person's open transaction on contacts) is an answer, not a hang. */
const SESSION = { max: 1, onnotice: () => {}, connect_timeout: 10, connection: { lock_timeout: 10_000, statement_timeout: 30_000 } } satisfies postgres.Options<Record<string, never>>;

/** A session on the demo database as DATABASE_URL's user, creating the database first when it does not exist. */
async function connectOrCreate(databaseUrl: string, database: string, creating: () => void): Promise<postgres.Sql> {
  const open = () => postgres(roleUrl(databaseUrl, database)!, SESSION);
  const sql = open();
  try {
    await sql`SELECT 1`;
    return sql;
  } catch (err) {
    await sql.end({ timeout: 1 });
    if (codeOf(err) !== "3D000") throw err;
  }
  creating();
  const server = postgres(databaseUrl, SESSION);
  try {
    await server.unsafe(`CREATE DATABASE ${quoteIdent(database)}`).catch((err: unknown) => {
      if (codeOf(err) !== "42P04") throw err; // another start made it meanwhile
    });
  } finally {
    await server.end({ timeout: 5 });
  }
  return open();
}

async function setUpDatabase(sql: postgres.Sql, names: { database: string; readRole: string; writeRole: string }): Promise<void> {
  const database = quoteIdent(names.database);
  const read = quoteIdent(names.readRole);
  const write = quoteIdent(names.writeRole);
  // One batch, one transaction. `updated_at` is the version: a trigger moves it on every write,
  // whoever writes (a person in psql too), so a change behind Countersign's back makes the plan stale.
  await sql.unsafe(`
    REVOKE ALL ON DATABASE ${database} FROM PUBLIC;
    GRANT CONNECT ON DATABASE ${database} TO ${read}, ${write};
    CREATE TABLE IF NOT EXISTS contacts (
      id int4 PRIMARY KEY, name text NOT NULL, email text, tier text,
      updated_at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE OR REPLACE FUNCTION contacts_touch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END $$;
    DROP TRIGGER IF EXISTS contacts_touch ON contacts;
    CREATE TRIGGER contacts_touch BEFORE UPDATE ON contacts FOR EACH ROW EXECUTE FUNCTION contacts_touch();
    INSERT INTO contacts (id, name, email, tier) VALUES ${SEED.map((row) => `(${row.map(literal).join(", ")})`).join(", ")}
      ON CONFLICT (id) DO NOTHING;
    REVOKE ALL ON contacts FROM PUBLIC, ${read}, ${write};
    GRANT SELECT ON contacts TO ${read};
    GRANT SELECT, INSERT, UPDATE, DELETE ON contacts TO ${write};
    -- Before PostgreSQL 15 anyone may create tables in public; not here, where this user owns the schema.
    DO $$ BEGIN REVOKE CREATE ON SCHEMA public FROM PUBLIC; EXCEPTION WHEN insufficient_privilege THEN NULL; END $$;`);
}

/** The demo roles' passwords, made once and kept in the data dir, so the URLs `start` prints stay valid across restarts. */
function demoPasswords(dataDir: string): { read: string; write: string } {
  const file = path.join(dataDir, PG_DEMO_FILE);
  if (existsSync(file)) {
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as { readPassword?: unknown; writePassword?: unknown };
      if (typeof saved.readPassword === "string" && typeof saved.writePassword === "string") return { read: saved.readPassword, write: saved.writePassword };
    } catch {
      // a damaged file: new passwords, set on the roles below
    }
  }
  const passwords = { read: randomBytes(16).toString("hex"), write: randomBytes(16).toString("hex") };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify({ readPassword: passwords.read, writePassword: passwords.write }, null, 2) + "\n", { mode: 0o600 });
  return passwords;
}

/** DATABASE_URL pointed at another database, as another role; undefined when the URL cannot carry a user (no host). */
function roleUrl(databaseUrl: string, database: string, role?: string, password?: string): string | undefined {
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  if (role !== undefined) {
    url.username = role;
    url.password = password ?? "";
    if (decodeURIComponent(url.username) !== role) return undefined;
  }
  return url.toString();
}

function literal(value: string | number): string {
  return typeof value === "number" ? String(value) : `'${value.replaceAll("'", "''")}'`;
}

/** postgres.js throws PostgresError itself, with the server's SQLSTATE as `code`. */
function codeOf(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

