import { causeChain } from "../util/cause-chain.ts";

/**
 * The one place that decides whether an error means "the database cannot be reached right now"
 * (a restart, a failover, a network cut) rather than "this query is wrong". Callers retry the
 * former and report the latter; nobody else matches on driver error codes.
 */
const UNREACHABLE = new Set([
  // Node sockets
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now, and class 08 (connection exception)
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
  // postgres.js
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
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
