import { userInfo } from "node:os";
import type { CliConfig } from "../config/load.ts";
import { runningServer } from "../server/data-dir-lock.ts";
import { ServiceError } from "../service/errors.ts";
import { pauseCountersign, readPause, resumeCountersign } from "../service/operations/index.ts";
import { type PauseState } from "../service/context.ts";
import { openMigrated } from "../store/open-migrated.ts";
import { cliContext } from "./cli-context.ts";

/** The kill switch's verbs, whichever way the CLI reaches the database (as `agents` does). */
interface PauseAdmin {
  pause(reason: string, by: string): Promise<PauseState>;
  resume(by: string): Promise<{ was: PauseState }>;
  status(): Promise<PauseState | undefined>;
  close(): Promise<void>;
}

/**
 * PostgreSQL is opened directly; an embedded data dir is opened directly only when no server
 * holds it, otherwise the server that does is asked through its /admin API.
 */
async function pauseAdmin(config: CliConfig): Promise<PauseAdmin> {
  const server = config.database.kind === "pglite" ? runningServer(config.database.dataDir) : undefined;
  if (server) {
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await fetch(server.url + "/admin" + path, {
        method,
        headers: { authorization: `Bearer ${server.adminToken}`, "content-type": "application/json" },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }).catch((err: unknown) => {
        throw new Error(`the server using this data dir (${server.url}) did not answer: ${(err as Error).message}`);
      });
      const json = (await response.json()) as T & { error?: { code: ServiceError["code"]; message: string } };
      if (json.error) throw new ServiceError(json.error.code, json.error.message);
      return json;
    };
    return {
      pause: (reason, by) => call("POST", "/pause", { reason, by }),
      resume: (by) => call("POST", "/resume", { by }),
      status: async () => (await call<{ pause: PauseState | null }>("GET", "/pause")).pause ?? undefined,
      close: async () => {},
    };
  }
  const database = await openMigrated(config.database);
  const ctx = cliContext(config, database);
  return {
    pause: (reason, by) => pauseCountersign(ctx, { operator: { via: "cli", name: by }, reason }),
    resume: (by) => resumeCountersign(ctx, { operator: { via: "cli", name: by } }),
    status: () => readPause(database.db),
    close: () => database.close(),
  };
}

/**
 * `countersign pause --reason "…"` / `pause --status`: the kill switch, on the database the server
 * uses. Who did it is the operating-system user unless `--by` names someone.
 */
export async function pauseCommand(
  config: CliConfig,
  options: { reason: string | undefined; by: string | undefined; status: boolean },
  out: (line: string) => void,
): Promise<number> {
  if (options.status && options.reason !== undefined)
    throw new ServiceError("invalid_request", 'pause --status only reads; give it no --reason (pause --reason "…" pauses)');
  if (!options.status && !options.reason?.trim())
    throw new ServiceError("invalid_request", 'countersign pause needs --reason "…": reviewers and agents are told why executors are held');
  const admin = await pauseAdmin(config);
  try {
    if (options.status) {
      const state = await admin.status();
      out(state ? `Paused since ${state.since} by ${state.by} (${state.via}): ${state.reason}` : "Not paused: executors take approved plans.");
    } else {
      const state = await admin.pause(options.reason!, by(options));
      out(
        `Paused by ${state.by} at ${state.since}: no executor takes a plan until 'countersign resume'. Plans executing now finish; agents still submit and people still decide.`,
      );
    }
  } finally {
    await admin.close();
  }
  return 0;
}

/** `countersign resume [--by NAME]`: lift the pause. */
export async function resumeCommand(config: CliConfig, options: { by: string | undefined }, out: (line: string) => void): Promise<number> {
  const admin = await pauseAdmin(config);
  try {
    const who = by(options);
    const { was } = await admin.resume(who);
    out(`Resumed by ${who} (paused since ${was.since} by ${was.by}: ${was.reason}). Approved plans with valid grants are applied again.`);
  } finally {
    await admin.close();
  }
  return 0;
}

const by = (options: { by: string | undefined }) => options.by?.trim() || operatingSystemUser();

function operatingSystemUser(): string {
  try {
    return userInfo().username || process.env.USER || "unknown";
  } catch {
    return process.env.USER ?? "unknown";
  }
}
