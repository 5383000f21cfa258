import { causeChain } from "./cause-chain.ts";

/**
 * What a failed start means to the person who started it: which variable or key is wrong and
 * what to do, in one line and without a stack trace. Pure: each function maps an error that an
 * edge (the database driver, `listen`) threw to a StartupError, or returns undefined for a
 * fault that is not about configuration (that one keeps its stack, as a bug should).
 */
export class StartupError extends Error {
  constructor(
    readonly key: string,
    readonly problem: string,
  ) {
    super(`${key}: ${problem}`);
    this.name = "StartupError";
  }
}

type DatabaseTarget = { kind: "pglite"; dataDir: string } | { kind: "postgres"; url: string };

/** The failure to open or migrate the configured database, told in terms of DATABASE_URL or COUNTERSIGN_DATA_DIR. */
export function databaseStartupError(err: unknown, target: DatabaseTarget): StartupError | undefined {
  const code = codeOf(err);
  if (target.kind === "pglite") {
    if (code && DATA_DIR_CODES.has(code)) {
      return new StartupError(
        "COUNTERSIGN_DATA_DIR",
        `cannot use ${target.dataDir} for the embedded database (${code}); point COUNTERSIGN_DATA_DIR at a directory this user may write, or set DATABASE_URL to use PostgreSQL`,
      );
    }
    return undefined;
  }
  const where = describeUrl(target.url);
  const fix = (what: string) => `${what} in DATABASE_URL (${where.safe})`;
  switch (code) {
    case "3D000":
      return new StartupError(
        "DATABASE_URL",
        `database "${where.database}" does not exist on ${where.hostPort}; create it (createdb -h ${where.host} -p ${where.port} -U ${where.user} ${where.database}) or ${fix("fix the database name")}`,
      );
    case "28000":
      return new StartupError(
        "DATABASE_URL",
        `PostgreSQL at ${where.hostPort} refused user "${where.user}" (${messageOf(err)}); create that role or ${fix("fix the user")}`,
      );
    case "28P01":
      return new StartupError("DATABASE_URL", `password authentication failed for user "${where.user}" at ${where.hostPort}; ${fix("fix the password")}`);
    case "42501":
      return new StartupError(
        "DATABASE_URL",
        `user "${where.user}" may not create Countersign's tables in "${where.database}" (${messageOf(err)}); grant it CREATE on the database, or run 'countersign migrate' once as the database's owner`,
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError("DATABASE_URL", `the host "${where.host}" cannot be resolved; ${fix("fix the host")}`);
    case "ECONNREFUSED":
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "CONNECT_TIMEOUT":
    case "ECONNRESET":
    case "57P03":
      return new StartupError(
        "DATABASE_URL",
        `cannot reach PostgreSQL at ${where.hostPort} (${code}); start PostgreSQL there, or ${fix("fix the host and port")}`,
      );
    default:
      return undefined;
  }
}

/** The failure to listen on HOST:PORT. */
export function listenStartupError(err: unknown, port: number, host: string): StartupError | undefined {
  switch (codeOf(err)) {
    case "EADDRINUSE":
      return new StartupError(
        "PORT",
        `port ${port} on ${host} is already in use (another Countersign, or another program); stop that one, or set PORT to a free port`,
      );
    case "EACCES":
      return new StartupError("PORT", `this user may not listen on port ${port} (ports below 1024 need privileges); set PORT to 1024 or above, e.g. PORT=3000`);
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError(
        "HOST",
        `${host} is not an address of this machine; set HOST to one of its interfaces, 0.0.0.0 (all) or 127.0.0.1 (this machine only)`,
      );
    default:
      return undefined;
  }
}

const DATA_DIR_CODES = new Set(["EACCES", "EPERM", "EROFS", "ENOSPC", "ENOTDIR", "EEXIST"]);

/** The first error code along the cause chain (an AggregateError answers with its first failure). */
function codeOf(err: unknown): string | undefined {
  for (const e of causeChain(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0) return codeOf(inner[0]);
  }
  return undefined;
}

/** The driver's own message (the innermost one), e.g. `role "x" does not exist`. */
function messageOf(err: unknown): string {
  let message = err instanceof Error ? err.message : String(err);
  for (const e of causeChain(err).slice(1)) {
    if (!(e instanceof Error)) break;
    message = e.message;
  }
  return message;
}

/** The parts of DATABASE_URL a message may name; never the password. */
function describeUrl(url: string): { host: string; port: string; hostPort: string; user: string; database: string; safe: string } {
  try {
    const u = new URL(url);
    const host = decodeURIComponent(u.hostname) || "localhost";
    const port = u.port || "5432";
    const user = decodeURIComponent(u.username) || "(the OS user)";
    const database = decodeURIComponent(u.pathname.replace(/^\//, "")) || decodeURIComponent(u.username) || "(default)";
    return {
      host,
      port,
      hostPort: `${host}:${port}`,
      user,
      database,
      safe: `${u.protocol}//${u.username ? `${u.username}${u.password ? ":***" : ""}@` : ""}${u.host}${u.pathname}`,
    };
  } catch {
    return { host: "?", port: "?", hostPort: "the configured host", user: "?", database: "?", safe: "unparseable" };
  }
}
