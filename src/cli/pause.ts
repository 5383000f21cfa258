import { userInfo } from "node:os";
import { parseArgs } from "node:util";
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

const USAGE = "usage: countersign pause --reason '…' [--by NAME] | countersign pause --status | countersign resume [--by NAME]";

/**
 * `countersign pause --reason "…"` / `countersign resume`: the kill switch, on the database the
 * server uses. Who did it is the operating-system user unless `--by` names someone.
 */
export async function pauseCommand(config: CliConfig, verb: "pause" | "resume", args: string[], out: (line: string) => void): Promise<void> {
  let values: { reason?: string | undefined; by?: string | undefined; status?: boolean | undefined };
  try {
    values = parseArgs({
      args,
      options: { reason: { type: "string" }, by: { type: "string" }, status: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new ServiceError("invalid_request", `${(err as Error).message}\n${USAGE}`);
  }
  if (verb === "resume" && (values.reason !== undefined || values.status))
    throw new ServiceError("invalid_request", `resume takes no --reason or --status\n${USAGE}`);
  if (verb === "pause" && !values.status && !values.reason?.trim()) {
    throw new ServiceError("invalid_request", `countersign pause needs --reason "…": reviewers and agents are told why executors are held\n${USAGE}`);
  }
  const by = values.by?.trim() || operatingSystemUser();
  const admin = await pauseAdmin(config);
  try {
    if (values.status) {
      const state = await admin.status();
      out(state ? `Paused since ${state.since} by ${state.by} (${state.via}): ${state.reason}` : "Not paused: executors take approved plans.");
    } else if (verb === "pause") {
      const state = await admin.pause(values.reason!, by);
      out(
        `Paused by ${state.by} at ${state.since}: no executor takes a plan until 'countersign resume'. Plans executing now finish; agents still submit and people still decide.`,
      );
    } else {
      const { was } = await admin.resume(by);
      out(`Resumed by ${by} (paused since ${was.since} by ${was.by}: ${was.reason}). Approved plans with valid grants are applied again.`);
    }
  } finally {
    await admin.close();
  }
}

function operatingSystemUser(): string {
  try {
    return userInfo().username || process.env.USER || "unknown";
  } catch {
    return process.env.USER ?? "unknown";
  }
}
