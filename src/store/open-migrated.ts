import { databaseStartupError } from "../util/startup-errors.ts";
import { openDatabase, type Database, type DatabaseTarget } from "./db.ts";

/** The configured database, migrated; a failure names DATABASE_URL (or COUNTERSIGN_DATA_DIR) and the fix. */
export async function openMigrated(target: Extract<DatabaseTarget, { kind: "pglite" | "postgres" }>): Promise<Database> {
  let database: Database | undefined;
  try {
    database = await openDatabase(target);
    await database.migrate();
    return database;
  } catch (err) {
    await database?.close().catch(() => {});
    throw databaseStartupError(err, target) ?? err;
  }
}
