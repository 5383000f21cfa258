import { userInfo } from "node:os";
import type { CliConfig } from "../config/load.ts";
import { runningServer } from "../server/data-dir-lock.ts";
import { createDelegation, endDelegation, listDelegations, type DelegationView } from "../service/delegation/index.ts";
import { ServiceError } from "../service/errors.ts";
import { openMigrated } from "../store/open-migrated.ts";
import { cliContext } from "./cli-context.ts";

/** What `countersign delegate` was given, as the dispatcher parsed it (src/cli/commands.ts). */
export interface DelegateOptions {
  /** Absent to delegate; `list`, or `end` with the id. */
  verb: string | undefined;
  id: string | undefined;
  from: string | undefined;
  to: string | undefined;
  until: string | undefined;
  targets: string[];
  /** `list --all`: those that ended or ran out too. */
  all: boolean;
  by: string | undefined;
}

/** The delegation verbs, whichever way the CLI reaches the database (as `agents` and `pause` do). */
interface DelegationAdmin {
  create(input: { delegator: string; delegate: string; until: string; targets?: string[]; by: string }): Promise<DelegationView & { timeZone: string }>;
  list(ended: boolean): Promise<DelegationView[]>;
  end(id: string, by: string): Promise<DelegationView>;
  close(): Promise<void>;
}

/**
 * PostgreSQL is opened directly; an embedded data dir is opened directly only when no server
 * holds it, otherwise the server that does is asked through its /admin API (which asks Slack
 * about the people, when Slack is connected).
 */
async function delegationAdmin(config: CliConfig): Promise<DelegationAdmin> {
  const server = config.database.kind === "pglite" ? runningServer(config.database.dataDir) : undefined;
  if (server) {
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${server.url}/admin${path}`, {
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
      create: (input) => call("POST", "/delegations", input),
      list: async (ended) => (await call<{ delegations: DelegationView[] }>("GET", `/delegations${ended ? "?ended=1" : ""}`)).delegations,
      end: (id, by) => call("POST", `/delegations/${encodeURIComponent(id)}/end`, { by }),
      close: async () => {},
    };
  }
  const database = await openMigrated(config.database);
  const ctx = cliContext(config, database);
  return {
    create: ({ by, ...input }) => createDelegation(ctx, { ...input, by: { cli: by } }),
    list: (ended) => listDelegations(ctx, { ended }),
    end: (id, by) => endDelegation(ctx, { id, by: { cli: by } }),
    close: () => database.close(),
  };
}

/**
 * `countersign delegate --from U… --to U… --until DATE [--target NAME…]`, `delegate list [--all]`,
 * `delegate end ID`: an admin's hand on delegations. Who did it is the operating-system user unless
 * `--by` names someone; it is recorded on the audit log.
 */
export async function delegateCommand(config: CliConfig, options: DelegateOptions, out: (line: string) => void): Promise<number> {
  const by = options.by ?? userInfo().username;
  const verb = options.verb;
  if (verb !== undefined && verb !== "list" && verb !== "end")
    throw new ServiceError("invalid_request", `'${verb}' is not one of list, end; to delegate, give --from, --to and --until`);
  if (verb === "end" && !options.id)
    throw new ServiceError("invalid_request", "delegate end needs the delegation's id ('countersign delegate list' shows them)");
  if (verb !== "end" && options.id) throw new ServiceError("invalid_request", `unexpected argument '${options.id}'`);
  const delegating = options.from !== undefined || options.to !== undefined || options.until !== undefined || options.targets.length > 0;
  if (verb !== undefined && delegating) throw new ServiceError("invalid_request", `delegate ${verb} takes no --from, --to, --until or --target`);
  if (verb === undefined) {
    const missing = (["from", "to", "until"] as const).filter((k) => !options[k]);
    if (missing.length > 0)
      throw new ServiceError(
        "invalid_request",
        `countersign delegate needs ${missing.map((k) => `--${k}`).join(", ")}, e.g. --from U024BE7LH --to U0G9QF9C6 --until 2026-12-20`,
      );
  }
  const admin = await delegationAdmin(config);
  try {
    if (verb === "list") {
      const found = await admin.list(options.all);
      if (found.length === 0)
        out(options.all ? "No delegations yet." : "No delegation is in force. ('countersign delegate list --all' shows those that ended.)");
      for (const d of found) out(line(d));
    } else if (verb === "end") {
      const ended = await admin.end(options.id!, by);
      out(`Ended delegation ${ended.id}: ${ended.delegate} no longer decides for ${ended.delegator}.`);
    } else {
      const targets = options.targets
        .flatMap((t) => t.split(","))
        .map((t) => t.trim())
        .filter((t) => t !== "");
      const made = await admin.create({
        delegator: options.from!,
        delegate: options.to!,
        until: options.until!,
        ...(targets.length > 0 ? { targets } : {}),
        by,
      });
      out(
        `Delegated: ${made.delegate} decides for ${made.delegator} ${made.targets ? `on ${made.targets.join(", ")}` : "on every target"} until ${made.until} (the end of ${options.until}, ${made.timeZone}).`,
      );
      out(made.id);
    }
  } finally {
    await admin.close();
  }
  return 0;
}

/** One delegation per line, tab-separated: id, delegator → delegate, until, targets, state. */
function line(d: DelegationView): string {
  const state = d.active ? "in force" : d.endedAt ? `ended ${d.endedAt} by ${d.endedBy}` : "ran out";
  return [d.id, `${d.delegator} → ${d.delegate}`, `until ${d.until}`, d.targets ? d.targets.join(",") : "every target", state, `by ${d.createdBy}`].join("\t");
}
