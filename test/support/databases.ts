import { readFileSync } from "node:fs";
import { inject } from "vitest";
import { openDatabase, type Database } from "../../src/store/db.ts";
import { openThrowawayPostgres } from "./throwaway-postgres.ts";

export { openThrowawayPostgres };

/** A migrated database of one kind, private to the test file that opened it. */
export interface TestDatabaseKind {
  name: "pglite" | "postgres";
  open(): Promise<Database>;
}

export const pglite: TestDatabaseKind = {
  name: "pglite",
  async open() {
    const dump = new Blob([readFileSync(inject("pgliteTemplate"))]);
    return openDatabase({ kind: "pglite-memory", loadDataDir: dump });
  },
};

const testDatabaseUrl = process.env.TEST_DATABASE_URL;

/**
 * PostgreSQL when TEST_DATABASE_URL is set: each test file gets a database of its own, created
 * next to the one the URL names and dropped at close. It is copied from the run's migrated
 * template (test/support/global-setup.ts): copying took 0.5-0.7 s where migrating an empty one
 * took 3.4-3.6 s (load 16). migrate() still runs, finding nothing to do. Without the URL the
 * PostgreSQL tests skip with a loud message, except under CI=true, where that is a failure.
 */
export const postgresKind: TestDatabaseKind | undefined = testDatabaseUrl
  ? {
      name: "postgres",
      async open() {
        const database = await openThrowawayPostgres(testDatabaseUrl, { template: inject("postgresTemplate") });
        await database.migrate();
        return database;
      },
    }
  : undefined;

if (!postgresKind) {
  const message = "TEST_DATABASE_URL is not set: PostgreSQL tests are SKIPPED. Set it (e.g. postgres://postgres@127.0.0.1:5432/test) or run .ci/run.";
  if (process.env.CI === "true") throw new Error(`CI=true but ${message}`);
  console.warn(`\n!!! ${message}\n`);
}

/** The database kinds every integration test runs on. */
export const databaseKinds: TestDatabaseKind[] = postgresKind ? [pglite, postgresKind] : [pglite];
