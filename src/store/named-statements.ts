import type postgres from "postgres";

/**
 * drizzle hands postgres.js every query as an unnamed statement (`unsafe(text, params,
 * { prepare: false })`), and postgres.js sends an unnamed statement with parameters in two round
 * trips: Parse + Describe, a wait for the parameter types, then Bind + Execute. Almost every
 * statement here has parameters, so each cost two round trips to PostgreSQL (seen with strace:
 * a Parse write, then a Bind write, per statement). Named statements are described once per
 * connection and then sent as Bind + Execute alone: one round trip, and no parse on the server.
 *
 * postgres.js keeps a connection's statements until the connection ends (it replaces each
 * connection after 30–60 minutes, `max_lifetime`), so statements whose text varies (IN lists of
 * different lengths) cost memory only until then. It re-prepares a statement the database
 * invalidated (a migration changed a table) when not inside a transaction.
 *
 * Wraps the client drizzle is given, and every transaction and savepoint client postgres.js
 * hands out from it, so transactions use named statements too.
 */
export function namedStatements<T extends postgres.Sql>(client: T): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === "unsafe") {
        return (query: string, args?: unknown[], options?: postgres.UnsafeQueryOptions) => target.unsafe(query, args as never, { ...options, prepare: true });
      }
      if (property === "begin" || property === "savepoint") {
        return (...args: unknown[]) => {
          const body = args.pop() as (tx: postgres.Sql) => unknown;
          const open = Reflect.get(target, property, receiver) as (...a: unknown[]) => unknown;
          return open(...args, (tx: postgres.Sql) => body(namedStatements(tx)));
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

/**
 * How named statements are planned: PostgreSQL's default, `auto`, set here so a server configured
 * otherwise does not change it. A statement is planned for its own values for its first five
 * executions on a connection, then once for all values (a generic plan) where that plan is
 * estimated no dearer. Statements read and written by key (a submit's key lookup and insert, the
 * admission guard's and the foreign keys' statements inside it) are then no longer planned at
 * every execution: at intake that was ~0.36 ms of PostgreSQL's time per plan and 0.3–0.4 ms of its
 * CPU (was `force_custom_plan`, kept from unnamed statements). A generic plan cannot know what a
 * parameter's value selects, so the few values that decide a plan are written into the text:
 * plan statuses (plan-status-sql.ts) and the digest flag (digest.ts); the outbox's undelivered
 * tests (outbox-lease.ts) always were. Checked at 1 M plans by bench/scans/generic.sql.
 */
export const PLAN_CACHE = { plan_cache_mode: "auto" } as const;
