import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.ts";

/**
 * A PostgreSQL cluster of our own, in a temp dir on a free port, that a test may restart at
 * will. The shared server on 5432 is never touched. PostgreSQL refuses to run as root, so
 * when we are root every command runs as the `postgres` user, who owns the temp dir.
 */
export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

export const privatePostgresAvailable = (): boolean => existsSync(join(PG_BIN, "initdb")) && existsSync(join(PG_BIN, "pg_ctl"));

const run = promisify(execFile);

export interface PrivatePostgres {
  port: number;
  /** A URL for the `postgres` database (trust auth, user postgres). */
  url: string;
  /** `pg_ctl restart -m fast`: every backend is told 57P01 and the server comes back on the same port. */
  restart(): Promise<void>;
  /** Stops the server (fast) and leaves it down until start(). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes the cluster. */
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  if (!privatePostgresAvailable()) throw new Error(`initdb/pg_ctl not found in ${PG_BIN} (set PG_BIN, or apt-get install postgresql-15)`);
  const dir = mkdtempSync(join(tmpdir(), "countersign-pg-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = (command: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", join(PG_BIN, command), ...args]) : run(join(PG_BIN, command), args);
  const data = join(dir, "data");
  const port = await freePort();
  await pg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]);
  // The socket dir is the temp dir: the default (/var/run/postgresql) may not be writable, and the shared server's must not be touched.
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
  const ctl = (...args: string[]) => pg("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-w", "-t", "60", "-o", serverOptions, ...args]);
  await ctl("start");
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => void (await ctl("restart", "-m", "fast")),
    stop: async () => void (await ctl("stop", "-m", "fast")),
    start: async () => void (await ctl("start")),
    destroy: async () => {
      await ctl("stop", "-m", "immediate").catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
