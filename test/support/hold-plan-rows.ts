import { sql } from "drizzle-orm";
import postgres from "postgres";
import type { Database } from "../../src/store/db.ts";

/**
 * Holds the plans' rows FOR UPDATE on a connection of its own (PostgreSQL, TEST_DATABASE_URL)
 * until release(): a decide on them waits for the lock, as behind a slow transaction elsewhere.
 */
export async function holdPlanRows(database: Database, planIds: string[]): Promise<{ release(): Promise<void> }> {
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = `/${(await database.rows<{ d: string }>(sql`SELECT current_database() AS d`))[0]!.d}`;
  const blocker = postgres(url.toString(), { max: 1, onnotice: () => {} });
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const transaction = blocker.begin(async (tx) => {
    await tx`SELECT id FROM plans WHERE id = ANY(${planIds}::uuid[]) FOR UPDATE`;
    locked();
    await held;
  });
  await Promise.race([isLocked, transaction]);
  return {
    async release() {
      release();
      await transaction;
      await blocker.end();
    },
  };
}

/** Sessions of this database waiting for a lock (the decisions holdPlanRows holds up). */
export const lockWaiters = async (database: Database): Promise<number> =>
  (await database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0]!
    .n;
