import { isDatabaseUnreachable } from "../store/database-errors.ts";

/**
 * Keeps a long-running command up when the PostgreSQL driver rejects a query nobody awaits any
 * more because its connection dropped. postgres.js settles every query on a connection that
 * closes with CONNECTION_CLOSED; one that no caller holds (seen when PostgreSQL restarts under
 * load: `test/slow/db-restart.test.ts` had `serve` exit on "write CONNECTION_CLOSED" from the
 * driver's socket close, with no caller of ours in the stack) becomes an unhandled rejection,
 * which Node turns into an exit. Such a rejection says only that the database went away, which
 * every loop already reports and retries. Anything else still ends the process, as before.
 */
export function surviveDatabaseDisconnects(warn: (line: string) => void = (line) => process.stderr.write(line + "\n")): void {
  process.on("unhandledRejection", (reason) => {
    if (isDatabaseUnreachable(reason)) {
      warn(
        `countersign: a database query lost its connection with nobody waiting for it (${(reason as { code?: string }).code ?? "unreachable"}); carrying on`,
      );
      return;
    }
    // Node's own behaviour for everything else: the process ends on it.
    throw reason;
  });
}
