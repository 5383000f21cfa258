// The drivers (and the template's unpacker) are imported when a database of their kind is
// opened, never up front: PGlite alone adds ~43 MB and its WASM to a process on PostgreSQL.
import { mkdirSync } from "node:fs";
import type { PGliteOptions } from "@electric-sql/pglite";
import { SQL, sql, type ExtractTablesWithRelations } from "drizzle-orm";
import { DrizzleQueryError } from "drizzle-orm/errors";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import { MIGRATIONS_FOLDER, refuseUnmigratable } from "./migrations.ts";
import { namedStatements, PLAN_CACHE } from "./named-statements.ts";
import * as schema from "./schema.ts";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or an open transaction: store functions take whichever the caller holds. */
export type Queryable = Db | Tx;

/** A statement as text with `$n` parameters, made without the query builder (store-new-plan.ts). */
export interface TextStatement {
  text: string;
  params: readonly (string | number | null)[];
}

export { MIGRATIONS_FOLDER };
/** Serializes migrations across replicas that start together. */
const MIGRATION_LOCK = 7_280_231_001;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** Raw SQL returning rows on both drivers (PGlite gives `{rows}`, postgres.js an array). */
  rows<T = Record<string, unknown>>(query: SQL, on?: Queryable): Promise<T[]>;
  /**
   * A statement as text with `$n` parameters, past the query builder: for the few hot statements
   * whose text is made once (a new plan's, store-new-plan.ts), so a call costs no SQL building.
   * Named on PostgreSQL like every statement. Errors are the driver's own (not wrapped by drizzle).
   */
  query<T = Record<string, unknown>>(text: string, params: readonly (string | number | null)[]): Promise<T[]>;
  /** NOTIFY on a channel, as a statement of its own (outside any transaction). */
  notify(channel: string, payload: string): Promise<void>;
  /** LISTEN on a channel; the returned function stops listening. postgres.js re-listens after reconnects. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** Applies this build's migrations; throws UnmigratableDatabase (migrations.ts), changing nothing, for a database they cannot bring up to date. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseTarget = { kind: "pglite"; dataDir: string } | { kind: "postgres"; url: string } | { kind: "pglite-memory"; loadDataDir?: Blob };

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  return target.kind === "postgres" ? openPostgres(target.url) : openPglite(target);
}

/**
 * PostgreSQL's default shared_buffers (128 MB) is sized for a server with many clients. PGlite
 * has one, a small database, and every read of a page not in the buffers is a memory copy from
 * its file system: 16 MB keeps ~70 MB less resident (docs/notes/pglite.md).
 */
const PGLITE_SETTINGS = ["-c", "shared_buffers=16MB"];

async function openPglite(target: Exclude<DatabaseTarget, { kind: "postgres" }>): Promise<Database> {
  const [{ PGlite }, { drizzle }, { migrate }, template] = await Promise.all([
    import("@electric-sql/pglite"),
    import("drizzle-orm/pglite"),
    import("drizzle-orm/pglite/migrator"),
    import("./pglite-template.ts"),
  ]);
  const options: PGliteOptions = { startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS] };
  if (target.kind === "pglite") {
    mkdirSync(target.dataDir, { recursive: true });
    options.dataDir = target.dataDir;
    if (!template.hasPgliteData(target.dataDir)) template.unpackTemplate(target.dataDir, template.installedPgliteVersion());
  } else if (target.loadDataDir) {
    options.loadDataDir = target.loadDataDir;
  }
  const client = await PGlite.create(options);
  const db = drizzle({ client, schema }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    rows: async <T>(query: SQL, on: Queryable = db) => ((await on.execute(query)) as unknown as { rows: T[] }).rows,
    query: async <T>(text: string, params: readonly (string | number | null)[]) =>
      (await failedQueryNamed(text, params, () => client.query<T>(text, [...params]))).rows,
    notify: async (channel, payload) => {
      await client.query("SELECT pg_notify($1, $2)", [channel, payload]);
    },
    listen: async (channel, onNotify) => {
      const stop = await client.listen(channel, onNotify);
      return async () => {
        if (!client.closed) await stop();
      };
    },
    // One process owns a PGlite data dir, so there is nobody to race; no lock needed.
    migrate: async () => {
      await refuseUnmigratable(async (text) => (await client.query<Record<string, unknown>>(text)).rows);
      await migrate(db as never, { migrationsFolder: MIGRATIONS_FOLDER });
    },
    close: async () => {
      if (!client.closed) await client.close();
    },
  };
}

/**
 * postgres.js reconnects by itself; its default backoff grows to 20 s per connection after a few
 * refused attempts, so a server that was down for seconds would stay unused for long after it
 * returned. Retry at most a second apart: a click held during an outage must land within
 * seconds of the database coming back (docs/notes/postgres-driver.md).
 */
const RECONNECT = { backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1), connect_timeout: 10 };

async function openPostgres(url: string): Promise<Database> {
  const [{ default: postgres }, { drizzle }, { migrate }] = await Promise.all([
    import("postgres"),
    import("drizzle-orm/postgres-js"),
    import("drizzle-orm/postgres-js/migrator"),
  ]);
  // Named statements: one round trip a statement instead of two (named-statements.ts).
  const client = postgres(url, { onnotice: () => {}, max: 10, ...RECONNECT, connection: PLAN_CACHE });
  const named = namedStatements(client);
  const db = drizzle({ client: named, schema }) as unknown as Db;
  return {
    db,
    kind: "postgres",
    rows: async <T>(query: SQL, on: Queryable = db) => (await on.execute(query)) as unknown as T[],
    query: async <T>(text: string, params: readonly (string | number | null)[]) =>
      (await failedQueryNamed(text, params, () => named.unsafe(text, [...params]))) as unknown as T[],
    notify: async (channel, payload) => {
      await client.notify(channel, payload);
    },
    listen: async (channel, onNotify) => {
      const { unlisten } = await client.listen(channel, onNotify);
      return unlisten;
    },
    migrate: async () => {
      // A session advisory lock must be held on the connection that migrates: use one of our own.
      const single = postgres(url, { onnotice: () => {}, max: 1 });
      try {
        await single`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
        await refuseUnmigratable((text) => single.unsafe(text));
        await migrate(drizzle({ client: single }), { migrationsFolder: MIGRATIONS_FOLDER });
        await single`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
      } finally {
        await single.end({ timeout: 5 });
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * A statement sent past the query builder fails the way drizzle's do: a DrizzleQueryError naming
 * the statement, the driver's error as its cause. So the log line of a failed hot statement says
 * what failed (log-redaction.ts drops the parameters) and database-errors.ts classifies it as any other.
 */
async function failedQueryNamed<T>(text: string, params: readonly (string | number | null)[], run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new DrizzleQueryError(text, [...params], err instanceof Error ? err : new Error(String(err)));
  }
}

export { sql };
