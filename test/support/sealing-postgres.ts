import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { afterAll, beforeAll } from "vitest";
import { openDatabase, type Database } from "../../src/store/db.ts";
import type { TestDatabaseKind } from "./databases.ts";
import { privatePostgresAvailable, startPrivatePostgres, type PrivatePostgres } from "./private-postgres.ts";

export interface SealingPostgres extends TestDatabaseKind {
  /** A database of its own, not migrated (to migrate it part of the way first). */
  openUnmigrated(): Promise<Database>;
}

/**
 * PostgreSQL for tests that wait for the audit log to be sealed. A seal stops below the
 * snapshot's xmin, which is the whole server's: on the shared server another test file's (or a
 * bench's) long transaction in another database holds every seal back, for minutes when a
 * million rows are seeded in one. So these tests get a private cluster of their own, started in
 * the file's beforeAll, with a database per open(). Without initdb (PG_BIN) they fall back to the
 * shared server; without TEST_DATABASE_URL there is no PostgreSQL kind, as for every other test.
 * Call at a file's top level.
 */
export function useSealingPostgres(): SealingPostgres | undefined {
  const shared = process.env.TEST_DATABASE_URL;
  if (!shared) return undefined;
  let cluster: PrivatePostgres | undefined;
  if (privatePostgresAvailable()) {
    beforeAll(async () => {
      cluster = await startPrivatePostgres();
    });
    afterAll(async () => {
      await cluster?.destroy();
    });
  }
  const openUnmigrated = async (): Promise<Database> => {
    const adminUrl = privatePostgresAvailable() ? cluster?.url : shared;
    if (!adminUrl) throw new Error("useSealingPostgres(): a database was opened before the file's beforeAll started the cluster");
    const admin = postgres(adminUrl, { onnotice: () => {}, max: 1 });
    const name = `cs_test_${randomBytes(6).toString("hex")}`;
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const database = await openDatabase({ kind: "postgres", url: url.toString() });
    return {
      ...database,
      async close() {
        await database.close();
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end({ timeout: 5 });
      },
    };
  };
  return {
    name: "postgres",
    openUnmigrated,
    async open() {
      const database = await openUnmigrated();
      await database.migrate();
      return database;
    },
  };
}
