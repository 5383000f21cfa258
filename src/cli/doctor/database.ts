import type { ServerConfig } from "../../config/load.ts";
import { bounded, type CheckResult, fail, pass } from "./check.ts";

/**
 * The server's database answers and holds this version's newest migration. It reads the
 * migration state only: nothing is migrated or written. The drivers load here, not with the
 * command, so the executor's doctor never loads them.
 */
export async function databaseCheck(config: ServerConfig): Promise<CheckResult> {
  const target = config.database;
  if (target.kind === "pglite")
    return pass(
      `database: the embedded PGlite in ${target.dataDir} (no DATABASE_URL), which serve makes and migrates itself; not opened here, as a running serve holds it`,
    );
  const where = `database ${databaseOf(target.url)}`;
  return bounded(where, "check that PostgreSQL runs there and that DATABASE_URL names it", async (signal) => {
    const [{ openDatabase, sql }, { migrationState }, { databaseStartupError }] = await Promise.all([
      import("../../store/db.ts"),
      import("../../store/migration-state.ts"),
      import("../../util/startup-errors.ts"),
    ]);
    const database = await openDatabase(target);
    const close = () => void database.close().catch(() => {});
    signal.addEventListener("abort", close, { once: true });
    try {
      try {
        await database.rows(sql`SELECT 1`);
      } catch (err) {
        const known = databaseStartupError(err, target);
        if (!known) throw err;
        return fail(`${where}: cannot be used`, known.message);
      }
      const state = await migrationState(database);
      if (state.ready) return pass(`${where}: reachable, and migrated to ${state.migration}, this version's newest`);
      const { problem, fix } = splitReason(state.reason);
      return fail(`${where}: ${problem}`, fix);
    } finally {
      signal.removeEventListener("abort", close);
      close();
    }
  });
}

/** migrationState's reason is "what is wrong: what to do"; its fix is one of two. */
function splitReason(reason: string): { problem: string; fix: string } {
  const at = reason.lastIndexOf(": ");
  const tail = reason.slice(at + 2);
  if (at < 0 || !/^(run|create) /.test(tail)) return { problem: reason, fix: "check DATABASE_URL" };
  const fix =
    tail === "run countersign migrate" ? "run 'countersign migrate' with this DATABASE_URL (serve also migrates when it starts, if its role may)" : tail;
  return { problem: reason.slice(0, at), fix };
}

/** `"name" on host:port`, never the password. */
function databaseOf(url: string): string {
  try {
    const u = new URL(url);
    const name = decodeURIComponent(u.pathname.replace(/^\//, "")) || decodeURIComponent(u.username) || "(default)";
    return `"${name}" on ${decodeURIComponent(u.hostname) || "localhost"}:${u.port || "5432"}`;
  } catch {
    return "at DATABASE_URL";
  }
}
