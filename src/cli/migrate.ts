import type { CliConfig } from "../config/load.ts";
import { openMigrated } from "../store/open-migrated.ts";

/** `countersign migrate`: apply the migrations and exit. */
export async function migrate(config: CliConfig, out: (line: string) => void): Promise<number> {
  const database = await openMigrated(config.database);
  await database.close();
  out(`Migrations applied (${database.kind}).`);
  return 0;
}
