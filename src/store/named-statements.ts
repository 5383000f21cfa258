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
 * Named statements keep the plans PostgreSQL chose for unnamed ones: each execution is planned
 * for its own parameter values, as an unnamed statement is. Under the default (`auto`) a
 * statement run five times may switch to a generic plan, which cannot use a partial index whose
 * predicate a parameter decides; the outbox, pending-plan and list reads are shaped for the
 * plans their values get (DEVELOPERS.md, "Reads that grow with stored history").
 */
export const PLAN_PER_EXECUTION = { plan_cache_mode: "force_custom_plan" } as const;
