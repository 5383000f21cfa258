import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { sql, type ExtractTablesWithRelations, type SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { packagePath } from "../package-path.ts";
import * as schema from "./schema.ts";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or an open transaction: store functions take whichever the caller holds. */
export type Queryable = Db | Tx;

export const MIGRATIONS_FOLDER = packagePath("migrations");
/** Serializes migrations across replicas that start together. */
const MIGRATION_LOCK = 7_280_231_001;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** Raw SQL returning rows on both drivers (PGlite gives `{rows}`, postgres.js an array). */
  rows<T = Record<string, unknown>>(query: SQL, on?: Queryable): Promise<T[]>;
  /** LISTEN on a channel; the returned function stops listening. postgres.js re-listens after reconnects. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseTarget = { kind: "pglite"; dataDir: string } | { kind: "postgres"; url: string } | { kind: "pglite-memory"; loadDataDir?: Blob };

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if (target.kind === "postgres") return openPostgres(target.url);
  if (target.kind === "pglite") mkdirSync(target.dataDir, { recursive: true });
  const client = target.kind === "pglite"
    ? await PGlite.create(target.dataDir)
    : await PGlite.create(target.loadDataDir ? { loadDataDir: target.loadDataDir } : {});
  const db = drizzlePglite({ client, schema }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    rows: async <T>(query: SQL, on: Queryable = db) => ((await on.execute(query)) as unknown as { rows: T[] }).rows,
    listen: async (channel, onNotify) => {
      const stop = await client.listen(channel, onNotify);
      return async () => {
        if (!client.closed) await stop();
      };
    },
    // One process owns a PGlite data dir, so there is nobody to race; no lock needed.
    migrate: () => migratePglite(db as never, { migrationsFolder: MIGRATIONS_FOLDER }),
    close: async () => {
      if (!client.closed) await client.close();
    },
  };
}

/**
 * postgres.js reconnects by itself; its default backoff grows to 20 s per connection after a few
 * refused attempts, so a server that was down for seconds would stay unused for long after it
 * returned. Retry at most a second apart: a click held during an outage must land within
 * seconds of the database coming back. (The driver's null-socket crash on a restart is fixed
 * by patches/apply.mjs.)
 */
const RECONNECT = { backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1), connect_timeout: 10 };

function openPostgres(url: string): Database {
  const client = postgres(url, { onnotice: () => {}, max: 10, ...RECONNECT });
  const db = drizzlePostgres({ client, schema }) as unknown as Db;
  return {
    db,
    kind: "postgres",
    rows: async <T>(query: SQL, on: Queryable = db) => (await on.execute(query)) as unknown as T[],
    listen: async (channel, onNotify) => {
      const { unlisten } = await client.listen(channel, onNotify);
      return unlisten;
    },
    migrate: async () => {
      // A session advisory lock must be held on the connection that migrates: use one of our own.
      const single = postgres(url, { onnotice: () => {}, max: 1 });
      try {
        await single`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
        await migratePostgres(drizzlePostgres({ client: single }), { migrationsFolder: MIGRATIONS_FOLDER });
        await single`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
      } finally {
        await single.end({ timeout: 5 });
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

export { sql };
