/**
 * A throwaway PostgreSQL cluster with pg_stat_statements loaded, for benches that read it (the
 * shared server lacks it in shared_preload_libraries and must not be restarted).
 */
import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "./figures/start.ts";

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * A throwaway cluster with pg_stat_statements loaded, owned by the postgres user when we are root.
 * `track: "all"` also counts statements run inside functions (the admission guard's counts).
 * Planning is tracked too (`total_plan_time`): a custom plan is made at each execution it is used.
 */
export async function privateCluster(track: "top" | "all" = "top"): Promise<{ url: string; destroy(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-bench-pgss-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, Number((await run("id", ["-u", "postgres"])).stdout.trim()), Number((await run("id", ["-g", "postgres"])).stdout.trim()));
  const pg = (command: string, a: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", path.join(PG_BIN, command), ...a]) : run(path.join(PG_BIN, command), a);
  const port = await freePort();
  const data = path.join(dir, "data");
  await pg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=${track} -c pg_stat_statements.track_planning=on -c pg_stat_statements.max=10000`;
  await pg("pg_ctl", ["-D", data, "-l", path.join(dir, "log"), "-w", "-t", "60", "-o", options, "start"]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    destroy: async () => {
      await pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
