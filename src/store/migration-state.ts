import { sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { isDatabaseUnreachable } from "./database-errors.ts";
import { appliedMigrations, mismatchText, shippedMigrations } from "./migrations.ts";

/** Whether this build's schema is in place: `ready`, or why not in words an operator can act on. */
export type MigrationState = { ready: true; migration: string } | { ready: false; reason: string };

/** The newest migration this build ships (drizzle records each applied one by its journal `when`). */
export function latestMigration(): { tag: string; when: number } {
  const { tag, when } = shippedMigrations().at(-1)!;
  return { tag, when };
}

/**
 * `/readyz`: the database answers and has this build's newest migration (drizzle's
 * `drizzle.__drizzle_migrations` holds each applied migration's `created_at` = its journal
 * `when`). A replica whose database is behind, cannot be migrated, or is unreachable, is not
 * ready for traffic.
 */
export async function migrationState(database: Pick<Database, "rows">, latest = latestMigration()): Promise<MigrationState> {
  try {
    const applied = await appliedMigrations((text) => database.rows(sql.raw(text)));
    if (applied.mismatch)
      return {
        ready: false,
        reason: `the database ${mismatchText(applied.mismatch)}: ${applied.mismatch === "newer-build" ? "run the newer version on it" : "create a new database and start again"}`,
      };
    if (applied.newest === undefined)
      return { ready: false, reason: `the database is not migrated (no migration applied; this build's newest is ${latest.tag}): run countersign migrate` };
    if (applied.newest < latest.when)
      return { ready: false, reason: `the database lacks migration ${latest.tag} (newest applied is older): run countersign migrate` };
    return { ready: true, migration: latest.tag };
  } catch (err) {
    return {
      ready: false,
      reason: isDatabaseUnreachable(err) ? "the database is unreachable" : `the database check failed: ${(err as Error).message.split("\n")[0]}`,
    };
  }
}
