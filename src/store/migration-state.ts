import { readFileSync } from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { MIGRATIONS_FOLDER, type Database } from "./db.ts";
import { isDatabaseUnreachable } from "./database-errors.ts";

/** Whether this build's schema is in place: `ready`, or why not in words an operator can act on. */
export type MigrationState = { ready: true; migration: string } | { ready: false; reason: string };

/** The newest migration this build ships (drizzle records each applied one by its journal `when`). */
export function latestMigration(folder = MIGRATIONS_FOLDER): { tag: string; when: number } {
  const journal = JSON.parse(readFileSync(path.join(folder, "meta", "_journal.json"), "utf8")) as { entries: { tag: string; when: number }[] };
  const last = journal.entries.at(-1);
  if (!last) throw new Error(`${folder}/meta/_journal.json lists no migration`);
  return { tag: last.tag, when: last.when };
}

/**
 * `/readyz`: the database answers and has this build's newest migration (drizzle's
 * `drizzle.__drizzle_migrations` holds each applied migration's `created_at` = its journal
 * `when`). A replica whose database is behind, or unreachable, is not ready for traffic.
 */
export async function migrationState(database: Pick<Database, "rows">, latest = latestMigration()): Promise<MigrationState> {
  try {
    // Two statements: a statement naming a table that does not exist fails before it runs.
    const [table] = await database.rows<{ name: string | null }>(sql`SELECT to_regclass('drizzle.__drizzle_migrations')::text AS name`);
    const [row] = table?.name
      ? await database.rows<{ applied: string | number | null }>(sql`SELECT max(created_at) AS applied FROM drizzle.__drizzle_migrations`)
      : [];
    const applied = row?.applied === null || row?.applied === undefined ? undefined : Number(row.applied);
    if (applied === undefined)
      return { ready: false, reason: `the database is not migrated (no migration applied; this build's newest is ${latest.tag}): run countersign migrate` };
    if (applied < latest.when) return { ready: false, reason: `the database lacks migration ${latest.tag} (newest applied is older): run countersign migrate` };
    return { ready: true, migration: latest.tag };
  } catch (err) {
    return {
      ready: false,
      reason: isDatabaseUnreachable(err) ? "the database is unreachable" : `the database check failed: ${(err as Error).message.split("\n")[0]}`,
    };
  }
}
