import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { StartupError } from "../util/startup-errors.ts";

/** What a running server leaves in its embedded data dir so the CLI can reach it instead of opening the dir twice. */
export interface ServerFile {
  pid: number;
  url: string;
  adminToken: string;
}

const FILE = "server.json";

export function serverFilePath(dataDir: string): string {
  return path.join(dataDir, FILE);
}

/** The server running on this data dir, if its process is alive. */
export function runningServer(dataDir: string): ServerFile | undefined {
  const file = serverFilePath(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    const info = JSON.parse(readFileSync(file, "utf8")) as ServerFile;
    process.kill(info.pid, 0);
    return info;
  } catch {
    return undefined; // unreadable, or its process is gone: a leftover from a crash
  }
}

/**
 * Claims the data dir for this process, or explains who holds it. PGlite must never be
 * opened by two processes at once: that corrupts it.
 */
export function claimDataDir(dataDir: string): { adminToken: string; publish(url: string): void; release(): void } {
  const holder = runningServer(dataDir);
  if (holder && holder.pid !== process.pid) {
    throw new StartupError(
      "COUNTERSIGN_DATA_DIR",
      `another Countersign (pid ${holder.pid}, ${holder.url}) is using ${dataDir}; stop it first, or set COUNTERSIGN_DATA_DIR to another directory`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
  const adminToken = randomBytes(32).toString("base64url");
  const file = serverFilePath(dataDir);
  const write = (url: string) => writeFileSync(file, JSON.stringify({ pid: process.pid, url, adminToken } satisfies ServerFile), { mode: 0o600 });
  write("(starting)");
  return {
    adminToken,
    publish: write,
    release: () => {
      if (runningServer(dataDir)?.pid === process.pid || existsSync(file)) rmSync(file, { force: true });
    },
  };
}
