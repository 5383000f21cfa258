import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { packagePath } from "../package-path.ts";

export const MIGRATIONS_FOLDER = packagePath("migrations");

/** A migration this build ships, as drizzle's migrator reads it: `when` is what it records as `created_at`, `hash` the SHA-256 of the file. */
export interface ShippedMigration {
  tag: string;
  when: number;
  hash: string;
}

/** The migrations in journal order, the baseline first. */
export function shippedMigrations(folder = MIGRATIONS_FOLDER): ShippedMigration[] {
  const journal = JSON.parse(readFileSync(path.join(folder, "meta", "_journal.json"), "utf8")) as { entries: { tag: string; when: number }[] };
  if (journal.entries.length === 0) throw new Error(`${folder}/meta/_journal.json lists no migration`);
  return journal.entries.map(({ tag, when }) => ({
    tag,
    when,
    hash: createHash("sha256")
      .update(readFileSync(path.join(folder, `${tag}.sql`), "utf8"))
      .digest("hex"),
  }));
}

/**
 * The newest `created_at` of the migrations the baseline replaced (0000_init … 0030): a database
 * they made holds bookkeeping rows stamped at or before it, and cannot be brought to the baseline.
 */
const PRE_BASELINE_NEWEST = 1_796_406_429_554;

/** Why this build cannot migrate a database, said so that the operator can act on it. */
export type MigrationMismatch = "pre-baseline" | "other-migrations" | "newer-build";

/** What `drizzle.__drizzle_migrations` holds: how many migrations, the newest one's `when`, and whether this build can go on from them. */
export interface AppliedMigrations {
  count: number;
  newest: number | undefined;
  mismatch: MigrationMismatch | undefined;
}

/**
 * Reads the database's migration bookkeeping. It rules out migrating the database when the
 * migrations before the baseline made it, or when a migration it holds is one this build ships
 * in another form (an unreleased checkout that regenerated the baseline or changed the guards
 * since): drizzle would apply the baseline over the tables already there and fail on the first,
 * or never apply the changed file. It rules out, too, a database a newer build migrated (a row
 * newer than every shipped migration): before 1.0 mixed versions are not supported, and this
 * build would run against a schema it does not know. `rows` runs a statement without parameters.
 */
export async function appliedMigrations(
  rows: (text: string) => Promise<Record<string, unknown>[]>,
  shipped: readonly ShippedMigration[] = shippedMigrations(),
): Promise<AppliedMigrations> {
  // Two statements: one naming a table that does not exist fails before it runs.
  const [table] = await rows("SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present");
  if (!table?.present) return { count: 0, newest: undefined, mismatch: undefined };
  // `when` is a number and `hash` hex (shippedMigrations): safe to write into the text.
  const known = shipped.map((m) => `(${Number(m.when)}::bigint, '${m.hash.replace(/[^0-9a-f]/g, "")}'::text)`).join(", ");
  const last = Math.max(...shipped.map((m) => Number(m.when)));
  const [applied] = await rows(`
    SELECT count(*)::int AS n, max(created_at)::text AS newest,
           coalesce(bool_or(created_at <= ${PRE_BASELINE_NEWEST}), false) AS pre,
           coalesce(bool_or(created_at <= ${last} AND (created_at, hash) NOT IN (VALUES ${known})), false) AS differs,
           coalesce(bool_or(created_at > ${last}), false) AS newer
      FROM drizzle.__drizzle_migrations`);
  const count = Number(applied?.n ?? 0);
  if (count === 0) return { count, newest: undefined, mismatch: undefined };
  const mismatch = applied!.pre ? "pre-baseline" : applied!.differs ? "other-migrations" : applied!.newer ? "newer-build" : undefined;
  return { count, newest: Number(applied!.newest), mismatch };
}

/** What a mismatch means and what to do, in one line (the caller names the database). */
export function mismatchText(mismatch: MigrationMismatch): string {
  if (mismatch === "pre-baseline") return "was created by a Countersign from before 0.2's migration baseline, and cannot be upgraded";
  if (mismatch === "newer-build")
    return "was migrated by a newer Countersign than this one, and this version cannot run on it (mixed versions are not supported)";
  return "was created by a Countersign build whose migrations differ from this one's (an unreleased build), and cannot be upgraded";
}

/** Thrown by Database.migrate() before it changes anything; openMigrated turns it into a StartupError naming the database. */
export class UnmigratableDatabase extends Error {
  constructor(readonly mismatch: MigrationMismatch) {
    super(`this database ${mismatchText(mismatch)}; create a new database and start again`);
    this.name = "UnmigratableDatabase";
  }
}

/** Throws UnmigratableDatabase for a database appliedMigrations rules out; run before drizzle's migrator, on its connection. */
export async function refuseUnmigratable(rows: (text: string) => Promise<Record<string, unknown>[]>): Promise<void> {
  const { mismatch } = await appliedMigrations(rows);
  if (mismatch) throw new UnmigratableDatabase(mismatch);
}
