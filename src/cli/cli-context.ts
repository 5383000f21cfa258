import type { ServiceContext } from "../service/context.ts";
import type { Database } from "../store/db.ts";

/** What a one-shot command has: a database and the config, but no grant key, Slack or targets to reach. */
export type CliContext = Pick<ServiceContext, "database" | "clock" | "config">;

/** The one context CLI commands run service verbs in; its clock is the machine's. */
export function cliContext(config: CliContext["config"], database: Database): CliContext {
  return { database, config, clock: () => new Date() };
}
