import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { openDatabase, type Database } from "../../src/store/db.ts";

/**
 * A new database created next to the one `adminUrl` names, dropped when it is closed: empty, or
 * a copy of `template` (a database on the same server nobody is connected to). Its name starts
 * with `prefix` (default cs_test), so one left behind by a killed run says who made it; `url` is
 * its connection string, for the processes a test spawns on it. No vitest here: the bench
 * scripts open theirs with it too.
 */
export async function openThrowawayPostgres(adminUrl: string, options: { template?: string; prefix?: string } = {}): Promise<Database & { url: string }> {
  const admin = postgres(adminUrl, { onnotice: () => {}, max: 1 });
  const name = `${options.prefix ?? "cs_test"}_${randomBytes(6).toString("hex")}`;
  await admin.unsafe(`CREATE DATABASE ${name}${options.template ? ` TEMPLATE ${options.template}` : ""}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ kind: "postgres", url: url.toString() });
  return {
    ...database,
    url: url.toString(),
    async close() {
      await database.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    },
  };
}
