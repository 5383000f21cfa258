/**
 * The one place that decides whether an error means "the database cannot be reached right now"
 * (a restart, a failover, a network cut) rather than "this query is wrong". Callers retry the
 * former and report the latter; nobody else matches on driver error codes.
 */
const UNREACHABLE = new Set([
  // Node sockets
  "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN",
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now, and class 08 (connection exception)
  "57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006",
  // postgres.js
  "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT",
]);

export function isDatabaseUnreachable(err: unknown): boolean {
  for (const e of causeChain(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && UNREACHABLE.has(code)) return true;
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0 && inner.every(isDatabaseUnreachable)) return true;
  }
  return false;
}

/**
 * An error and its causes, outermost first, at most six deep: drizzle wraps driver errors in
 * DrizzleQueryError (cause), and Node may raise an AggregateError of per-address failures
 * (`errors`, left to the caller). Every reader of driver errors walks them through this.
 */
export function causeChain(err: unknown): object[] {
  const chain: object[] = [];
  for (let e = err; e && typeof e === "object" && chain.length < 6; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/** What the HTTP doors answer while the database is unreachable: retry shortly, nothing was done. */
export const DATABASE_UNAVAILABLE = {
  code: "database_unavailable",
  message: "Countersign's database is unreachable for the moment; nothing was done. Retry shortly.",
} as const;
