import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { quoteIdent } from "../adapters/postgres-row/column-types.ts";
import { databaseStartupError } from "../util/startup-errors.ts";
import { isDatabaseUnreachable } from "../store/database-errors.ts";
import { demoDatabaseNames } from "./postgres-row-demo.ts";
import { scramSha256Verifier } from "./scram-verifier.ts";

/**
 * The `postgres.row` demo of `countersign start`: when DATABASE_URL is set, a database
 * of its own on the same server with a `contacts` table, a role that may only SELECT it and a
 * role that may write it, so a newcomer sees an agent's change to a database row previewed with
 * a credential that cannot write and applied by the executor.
 */

export const PG_DEMO_FILE = "demo-postgres.json";

/**
 * The comment that marks a database or role as the demo's own. Only what carries it is changed:
 * a database or role that merely has the demo's name (someone's, or a crash's leftover) is left
 * alone, and the demo turns off saying so.
 */
export const DEMO_MARKER = "made by countersign start for its postgres.row demo; safe to drop";

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
 * (the read role's password kept in the data dir, the write role's new at each start), table,
 * trigger, rows that are not there yet (a change that landed stays), and grants. Answers why not
 * when DATABASE_URL cannot name the demo, when the server's user may not do it (no CREATEDB or
 * CREATEROLE), when a database or role of the demo's name is not marked as the demo's, or when
 * a demo role has gained more than a demo role may have; a DATABASE_URL that does not work at
 * all throws the StartupError the server itself would.
 */
export async function provisionPostgresRowDemo(databaseUrl: string, dataDir: string): Promise<ProvisionResult> {
  let names: ReturnType<typeof demoDatabaseNames>;
  let user: string;
  try {
    names = demoDatabaseNames(databaseUrl);
    user = decodeURIComponent(new URL(databaseUrl).username) || "(the default user)";
  } catch (err) {
    // The server itself may run on a URL this cannot read: postgres.js takes several host:port pairs.
    return {
      ok: false,
      reason: `cannot derive the demo's database and roles from DATABASE_URL (${messageOf(err)}); the demo needs a URL with one host and valid %-escapes`,
    };
  }
  const passwords = { read: demoReadPassword(dataDir), write: randomBytes(16).toString("hex") };
  const readUrl = roleUrl(databaseUrl, names.database, names.readRole, passwords.read);
  const writeUrl = roleUrl(databaseUrl, names.database, names.writeRole, passwords.write);
  if (!readUrl || !writeUrl) return { ok: false, reason: "DATABASE_URL names no host, so no URL can name the demo's own roles" };
  let step = `connect to "${names.database}"`;
  try {
    // On a restart the demo database is there: one connection does everything (each costs ~50 ms).
    const sql = await connectOrCreate(databaseUrl, names.database, () => (step = `create the database "${names.database}"`));
    try {
      // One start provisions at a time: the role checks below are check-then-create.
      await sql`SELECT pg_advisory_lock(hashtext('countersign postgres.row demo'))`;
      step = `check the database "${names.database}"`;
      const [database] = await sql<{ marked: boolean }[]>`
        SELECT coalesce(shobj_description(oid, 'pg_database') = ${DEMO_MARKER}, false) AS marked FROM pg_database WHERE datname = current_database()`;
      // Two first starts at once: the one that did not create it may look before it is marked, and says so; the next start finds it marked.
      if (!database?.marked)
        return {
          ok: false,
          reason: `a database "${names.database}" exists that this demo did not make (it lacks the demo's marker comment), so it is left as it is; drop it if it is a leftover of the demo`,
        };
      step = "set up the demo roles";
      const refused = await setUpRoles(sql, names, passwords);
      if (refused) return { ok: false, reason: refused };
      step = `set up the contacts table and its grants in "${names.database}"`;
      await setUpDatabase(sql, names);
    } finally {
      await sql.end({ timeout: 5 });
    }
    return { ok: true, demo: { ...names, readUrl, writeUrl } };
  } catch (err) {
    // A server that cannot be reached is the server's own startup error, said the same way (and not after a second wait).
    if (isDatabaseUnreachable(err)) throw databaseStartupError(err, { kind: "postgres", url: databaseUrl }) ?? err;
    return {
      ok: false,
      reason: `could not ${step} as user "${user}": ${messageOf(err)}${codeOf(err) === "42501" ? " (the demo needs a DATABASE_URL user with CREATEDB and CREATEROLE)" : ""}`,
    };
  }
}

/** `start` never waits on the demo for long: a lock someone holds (a person's open transaction on contacts) is an answer, not a hang. */
const SESSION = { max: 1, onnotice: () => {}, connect_timeout: 10, connection: { lock_timeout: 10_000, statement_timeout: 30_000 } } satisfies postgres.Options<
  Record<string, never>
>;

/** A session on the demo database as DATABASE_URL's user, creating (and marking) the database first when it does not exist. */
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
    const created = await server.unsafe(`CREATE DATABASE ${quoteIdent(database)}`).then(
      () => true,
      (err: unknown) => {
        if (codeOf(err) !== "42P04") throw err; // another start made it meanwhile, and marks it
        return false;
      },
    );
    // CREATE DATABASE cannot share a transaction: a crash before this line leaves an unmarked database, which later starts refuse.
    if (created) await server.unsafe(`COMMENT ON DATABASE ${quoteIdent(database)} IS ${literal(DEMO_MARKER)}`);
  } finally {
    await server.end({ timeout: 5 });
  }
  return open();
}

/** What is known of an existing role of a demo role's name. */
interface RoleFacts {
  rolname: string;
  marked: boolean;
  powerful: boolean;
  member_of: string;
  members: string;
  owns: number;
  granted_elsewhere: number;
}

/**
 * The two demo roles: created marked, with a SCRAM verifier for a password; when they exist,
 * checked and reset (LOGIN, NOINHERIT, the new verifier). Answers why not (the demo goes off)
 * when a role of that name is not marked, has an attribute a demo role must not have, belongs to
 * a role or has members (a membership such as pg_write_all_data carries its rights along), owns
 * anything, or holds privileges outside the demo database: each would let the demo's credentials
 * reach further than `contacts`, or someone else's credentials reach it.
 */
async function setUpRoles(
  sql: postgres.Sql,
  names: { readRole: string; writeRole: string },
  passwords: { read: string; write: string },
): Promise<string | undefined> {
  // current_user is not counted among the members: PostgreSQL 16 makes a CREATEROLE user that is not a superuser a member of each role it creates.
  const found = await sql<RoleFacts[]>`
    SELECT r.rolname,
           coalesce(shobj_description(r.oid, 'pg_authid') = ${DEMO_MARKER}, false) AS marked,
           r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolbypassrls OR r.rolreplication AS powerful,
           array_to_string(ARRAY(SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid ORDER BY 1), ', ') AS member_of,
           array_to_string(ARRAY(SELECT u.rolname FROM pg_auth_members m JOIN pg_roles u ON u.oid = m.member WHERE m.roleid = r.oid AND u.rolname <> current_user ORDER BY 1), ', ') AS members,
           (SELECT count(*) FROM pg_shdepend d WHERE d.refclassid = 'pg_authid'::regclass AND d.refobjid = r.oid AND d.deptype = 'o')::int AS owns,
           (SELECT count(*) FROM pg_shdepend d, pg_database here
             WHERE here.datname = current_database() AND d.refclassid = 'pg_authid'::regclass AND d.refobjid = r.oid AND d.deptype = 'a'
               AND d.dbid <> here.oid AND NOT (d.classid = 'pg_database'::regclass AND d.objid = here.oid))::int AS granted_elsewhere
      FROM pg_roles r WHERE r.rolname IN (${names.readRole}, ${names.writeRole}) ORDER BY r.rolname`;
  for (const role of found) {
    const why = refusedRole(role);
    if (why) return `a role "${role.rolname}" exists ${why}; it is left as it is, and the demo stays off until it is dropped or fixed`;
  }
  for (const [role, password] of [
    [names.readRole, passwords.read],
    [names.writeRole, passwords.write],
  ] as const) {
    const verifier = literal(scramSha256Verifier(password));
    // A simple query of several statements is one transaction: a role is never there without its marker.
    await sql.unsafe(
      found.some((r) => r.rolname === role)
        ? `ALTER ROLE ${quoteIdent(role)} WITH LOGIN NOINHERIT CONNECTION LIMIT -1 VALID UNTIL 'infinity' PASSWORD ${verifier}`
        : `CREATE ROLE ${quoteIdent(role)} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${verifier}; COMMENT ON ROLE ${quoteIdent(role)} IS ${literal(DEMO_MARKER)}`,
    );
  }
  return undefined;
}

function refusedRole(role: RoleFacts): string | undefined {
  if (!role.marked) return "that this demo did not make (it lacks the demo's marker comment)";
  if (role.powerful) return "with more rights than a demo role may have (superuser, CREATEROLE, CREATEDB, BYPASSRLS or REPLICATION)";
  if (role.member_of) return `as a member of ${role.member_of}, whose rights it would carry`;
  if (role.members) return `with members (${role.members}), who would carry its rights`;
  if (role.owns > 0) return `owning ${role.owns} object(s) (a demo role owns nothing)`;
  if (role.granted_elsewhere > 0) return `holding privileges on ${role.granted_elsewhere} object(s) outside the demo database`;
  return undefined;
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

/**
 * The read role's password, made once and kept in the data dir, so the `psql` line `start` prints
 * stays valid across restarts. The write role's is never written down: a new one at each start
 * goes to the executor's environment.
 */
function demoReadPassword(dataDir: string): string {
  const file = path.join(dataDir, PG_DEMO_FILE);
  if (existsSync(file)) {
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as { readPassword?: unknown; writePassword?: unknown };
      if (typeof saved.readPassword === "string") {
        // A file from before the write password left it is rewritten without it.
        if (saved.writePassword !== undefined) keepReadPassword(file, saved.readPassword);
        return saved.readPassword;
      }
    } catch {
      // a damaged file: a new password, set on the role
    }
  }
  mkdirSync(dataDir, { recursive: true });
  return keepReadPassword(file, randomBytes(16).toString("hex"));
}

function keepReadPassword(file: string, readPassword: string): string {
  writeFileSync(file, JSON.stringify({ readPassword }, null, 2) + "\n", { mode: 0o600 });
  return readPassword;
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
