import { databaseStartupError, StartupError } from "../util/startup-errors.ts";
import { openDatabase, type Database, type DatabaseTarget } from "./db.ts";
import { mismatchText, UnmigratableDatabase } from "./migrations.ts";

type Target = Extract<DatabaseTarget, { kind: "pglite" | "postgres" }>;

/** The configured database, migrated; a failure names DATABASE_URL (or COUNTERSIGN_DATA_DIR) and the fix. */
export async function openMigrated(target: Target): Promise<Database> {
  let database: Database | undefined;
  try {
    database = await openDatabase(target);
    await database.migrate();
    return database;
  } catch (err) {
    await database?.close().catch(() => {});
    if (err instanceof UnmigratableDatabase) throw unmigratableError(err, target);
    throw databaseStartupError(err, target) ?? err;
  }
}

/** A database this build cannot migrate is started afresh: nothing in it can be carried over. */
function unmigratableError(err: UnmigratableDatabase, target: Target): StartupError {
  const what = mismatchText(err.mismatch);
  // A newer build's database is not this build's to replace: the newer version runs on it.
  if (err.mismatch === "newer-build") {
    const where = target.kind === "pglite" ? `the embedded database in ${target.dataDir}` : `the database ${databaseOf(target.url)}`;
    return new StartupError(target.kind === "pglite" ? "COUNTERSIGN_DATA_DIR" : "DATABASE_URL", `${where} ${what}; run the newer version on it`);
  }
  if (target.kind === "pglite")
    return new StartupError(
      "COUNTERSIGN_DATA_DIR",
      `the embedded database in ${target.dataDir} ${what}; delete ${target.dataDir} (or set COUNTERSIGN_DATA_DIR to a new directory) and start again`,
    );
  return new StartupError("DATABASE_URL", `the database ${databaseOf(target.url)} ${what}; create a new database, point DATABASE_URL at it and start again`);
}

/** `"name" on host:port`, never the password. */
function databaseOf(url: string): string {
  try {
    const u = new URL(url);
    const name = decodeURIComponent(u.pathname.replace(/^\//, "")) || decodeURIComponent(u.username) || "(default)";
    return `"${name}" on ${decodeURIComponent(u.hostname) || "localhost"}:${u.port || "5432"}`;
  } catch {
    return "DATABASE_URL names";
  }
}
