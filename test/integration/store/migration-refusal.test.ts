import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, sql, type Database } from "../../../src/store/db.ts";
import { migrationState } from "../../../src/store/migration-state.ts";
import { shippedMigrations } from "../../../src/store/migrations.ts";
import { runCli } from "../../support/cli.ts";
import { databaseKinds } from "../../support/databases.ts";

/** The bookkeeping row the first migration before the baseline (0000_init) left: its hash and journal `when`. */
const OLD_INIT = { hash: "d97ffb2aa76ec59a3459bcc728484aba28b5e5aa13e48532a47593c9b4ea91bc", when: 1_796_226_160_121 };

const addRow = (database: Database, row: { hash: string; when: number }) =>
  database.rows(sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES (${row.hash}, ${row.when})`);
const rowCount = async (database: Database) =>
  Number((await database.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`))[0]!.n);

/**
 * A database this build's migrations cannot bring up to date is refused before anything is
 * applied: drizzle would run the baseline over its tables. (A real database of the migrations
 * before the baseline: baseline-schema.test.ts, on PostgreSQL.)
 */
describe.each(databaseKinds)("databases the migrations cannot bring up to date, on $name", (kind) => {
  let database: Database;
  beforeAll(async () => {
    database = await kind.open();
  });
  afterAll(async () => {
    await database?.close();
  });

  it("one made by the migrations before the baseline is refused, changing nothing; /readyz says why", async () => {
    await addRow(database, OLD_INIT);
    await expect(database.migrate()).rejects.toMatchObject({ name: "UnmigratableDatabase", mismatch: "pre-baseline" });
    expect(await rowCount(database)).toBe(shippedMigrations().length + 1);
    expect(await migrationState(database)).toEqual({
      ready: false,
      reason: expect.stringMatching(
        /^the database was created by a Countersign from before 0\.2's migration baseline, and cannot be upgraded: create a new database/,
      ),
    });
    await database.rows(sql`DELETE FROM drizzle.__drizzle_migrations WHERE created_at = ${OLD_INIT.when}`);
    await database.migrate();
  });

  it("one holding a shipped migration in another form (a regenerated baseline, an edited guards file) is refused", async () => {
    const guards = shippedMigrations().at(-1)!;
    await database.rows(sql`UPDATE drizzle.__drizzle_migrations SET hash = ${"0".repeat(64)} WHERE created_at = ${guards.when}`);
    await expect(database.migrate()).rejects.toMatchObject({
      name: "UnmigratableDatabase",
      mismatch: "other-migrations",
      message: expect.stringContaining("whose migrations differ from this one's"),
    });
    await database.rows(sql`UPDATE drizzle.__drizzle_migrations SET hash = ${guards.hash} WHERE created_at = ${guards.when}`);
    await database.migrate();
  });

  it("one a newer build migrated (a migration newer than every shipped one) is refused: mixed versions are not supported", async () => {
    const newer = { hash: "f".repeat(64), when: shippedMigrations().at(-1)!.when + 1 };
    await addRow(database, newer);
    await expect(database.migrate()).rejects.toMatchObject({
      name: "UnmigratableDatabase",
      mismatch: "newer-build",
      message: expect.stringContaining("was migrated by a newer Countersign than this one"),
    });
    expect(await migrationState(database)).toMatchObject({ ready: false, reason: expect.stringContaining("mixed versions are not supported") });
    await database.rows(sql`DELETE FROM drizzle.__drizzle_migrations WHERE created_at = ${newer.when}`);
    await database.migrate();
    expect(await migrationState(database)).toMatchObject({ ready: true });
  });
});

describe("the embedded default", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-pre-baseline-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("made before the baseline, it is refused at start in one line that says which directory to delete", async () => {
    const dataDir = path.join(dir, ".countersign");
    const database = await openDatabase({ kind: "pglite", dataDir });
    try {
      await database.migrate();
      await addRow(database, OLD_INIT);
    } finally {
      await database.close();
    }
    const result = await runCli(["migrate"], { cwd: dir, env: { COUNTERSIGN_DATA_DIR: undefined, DATABASE_URL: undefined } });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr.trimEnd().split("\n"), result.stderr).toEqual([
      expect.stringMatching(
        /^countersign: COUNTERSIGN_DATA_DIR: the embedded database in (\S*\.countersign) was created by a Countersign from before 0\.2's migration baseline, and cannot be upgraded; delete \1 \(or set COUNTERSIGN_DATA_DIR to a new directory\) and start again$/,
      ),
    ]);
  }, 120_000);
});
