import { randomBytes } from "node:crypto";
import postgres from "postgres";
import type { TargetReader, TargetWriter } from "../../src/adapters/adapter.ts";
import { postgresRowAdapter } from "../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget, type PostgresRowAction, type PostgresRowPlanned } from "../../src/plan/postgres-row-schema.ts";

/**
 * A database of its own (prefix `adapters_`) on TEST_DATABASE_URL's server, with the tables the
 * postgres.row tests address, a role that may only SELECT them, a role that may write them, and
 * a trigger that logs every row written (so "nothing was written" is counted, not assumed).
 */
export interface RowDatabase {
  /** Connected as the server's admin, to the test database: set up rows, write behind Countersign's back. */
  admin: postgres.Sql;
  readUrl: string;
  writeUrl: string;
  /** Rows written to the logged tables so far, by anyone. */
  writes(): Promise<number>;
  close(): Promise<void>;
}

export const SCHEMA = `
  CREATE TABLE write_log (n bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL);
  CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
    BEGIN INSERT INTO write_log (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$;
  CREATE TABLE contacts (
    id int4 PRIMARY KEY, name text NOT NULL, email varchar(40), score numeric(10,2), big int8, active bool DEFAULT true,
    born date, seen_at timestamptz, tags jsonb, avatar bytea, ref uuid, location point,
    updated_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE accounts (id int8, region text, balance numeric, version int4 NOT NULL DEFAULT 1, PRIMARY KEY (id, region));
  CREATE TABLE notes (id int4 PRIMARY KEY, body text);
  CREATE TABLE tasks (id int4 PRIMARY KEY, title text NOT NULL, updated_at timestamptz NOT NULL DEFAULT clock_timestamp());
  CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END $$;
  CREATE TRIGGER tasks_touch BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION touch();
  CREATE TRIGGER contacts_log AFTER INSERT OR UPDATE OR DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION log_write();
  CREATE TRIGGER accounts_log AFTER INSERT OR UPDATE OR DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION log_write();
  CREATE TRIGGER notes_log AFTER INSERT OR UPDATE OR DELETE ON notes FOR EACH ROW EXECUTE FUNCTION log_write();
  CREATE TRIGGER tasks_log AFTER INSERT OR UPDATE OR DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION log_write();
`;

export async function openRowDatabase(adminUrl: string): Promise<RowDatabase> {
  const suffix = randomBytes(5).toString("hex");
  const name = `adapters_${suffix}`;
  const readRole = `adapters_${suffix}_read`;
  const writeRole = `adapters_${suffix}_write`;
  const server = postgres(adminUrl, { onnotice: () => {}, max: 1 });
  await server.unsafe(`CREATE DATABASE ${name}`);
  await server.unsafe(`CREATE ROLE ${readRole} LOGIN`);
  await server.unsafe(`CREATE ROLE ${writeRole} LOGIN`);
  const url = (role: string | undefined) => {
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    if (role) u.username = role;
    return u.toString();
  };
  const admin = postgres(url(undefined), { onnotice: () => {}, max: 2 });
  await admin.unsafe(SCHEMA);
  await admin.unsafe(`GRANT SELECT ON contacts, accounts, notes, tasks TO ${readRole}`);
  await admin.unsafe(`GRANT SELECT, INSERT, UPDATE, DELETE ON contacts, accounts, notes, tasks TO ${writeRole}`);
  return {
    admin,
    readUrl: url(readRole),
    writeUrl: url(writeRole),
    async writes() {
      const [row] = await admin<{ n: string }[]>`SELECT count(*)::text AS n FROM write_log`;
      return Number(row!.n);
    },
    async close() {
      await admin.end({ timeout: 5 });
      await server.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.unsafe(`DROP ROLE IF EXISTS ${readRole}`);
      await server.unsafe(`DROP ROLE IF EXISTS ${writeRole}`);
      await server.end({ timeout: 5 });
    },
  };
}

/**
 * A postgres.row target 'crmdb' on `db` addressing `tables` (agents allowed every op on all of
 * them), with its reader and writer opened as the executor opens them; close() closes both.
 */
export function openRowTarget(
  db: RowDatabase,
  tables: Record<string, unknown>,
  timeoutMs: number,
): {
  target: PostgresRowTarget;
  reader: TargetReader<PostgresRowAction, PostgresRowPlanned>;
  writer: TargetWriter<PostgresRowPlanned>;
  close(): Promise<void>;
} {
  const target = PostgresRowTarget.parse({
    adapter: "postgres.row",
    read: { url: db.readUrl },
    write: { url: db.writeUrl },
    tables,
    allow: { ops: ["update", "insert", "delete"], tables: Object.keys(tables) },
    timeoutMs,
  });
  const adapter = postgresRowAdapter();
  const reader = adapter.openReader("crmdb", target);
  const writer = adapter.openWriter("crmdb", target);
  return { target, reader, writer, close: async () => void (await Promise.all([reader.close(), writer.close()])) };
}
