import postgres from "postgres";
import { afterAll, beforeAll, inject } from "vitest";
import { openDatabase, type Database } from "../../src/store/db.ts";
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
  const adminUrl = (): string => {
    const url = privatePostgresAvailable() ? cluster?.url : shared;
    if (!url) throw new Error("useSealingPostgres(): a database was opened before the file's beforeAll started the cluster");
    return url;
  };
  // open() copies a migrated database, as postgresKind does (see there): on the private cluster
  // one made at the first open() (a file that opens one per test, audit-verify, opens 8); on the
  // shared server the run's template.
  let template: Promise<string> | undefined;
  const migratedTemplate = (): Promise<string> => {
    if (!privatePostgresAvailable()) return Promise.resolve(inject("postgresTemplate")!);
    return (template ??= (async () => {
      const admin = postgres(adminUrl(), { onnotice: () => {}, max: 1 });
      try {
        await admin.unsafe("CREATE DATABASE cs_sealing_template");
      } finally {
        await admin.end({ timeout: 5 });
      }
      const url = new URL(adminUrl());
      url.pathname = "/cs_sealing_template";
      const database = await openDatabase({ kind: "postgres", url: url.toString() });
      try {
        await database.migrate();
      } finally {
        await database.close(); // a database is copied only while nobody is connected to it
      }
      return "cs_sealing_template";
    })());
  };
  return {
    name: "postgres",
    openUnmigrated: async () => openThrowawayPostgres(adminUrl()),
    async open() {
      const database = await openThrowawayPostgres(adminUrl(), { template: await migratedTemplate() });
      await database.migrate();
      return database;
    },
  };
}
