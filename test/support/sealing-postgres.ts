import { afterAll, beforeAll } from "vitest";
import type { Database } from "../../src/store/db.ts";
import { openThrowawayPostgres, type TestDatabaseKind } from "./databases.ts";
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
    return openThrowawayPostgres(adminUrl);
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
