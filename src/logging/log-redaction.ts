import { redactText } from "../policy/redact.ts";

/**
 * What an error may say in a log line. Errors carry more than their message: drizzle appends
 * every query parameter ("params: …", a plan's document included), PostgreSQL's `detail` quotes
 * the failing row or key, HTTP clients keep the request's headers. Log lines keep the kind of
 * error, its message and stack without those values, its codes, and its causes, the same way.
 */

/** Fields of an error (or its causes) never copied into a log line: they hold values, not facts about the fault. */
const VALUE_FIELDS = new Set([
  "params",
  "parameters",
  "args",
  "detail",
  "where",
  "hint",
  "internalQuery",
  "config",
  "request",
  "response",
  "headers",
  "body",
  "data",
  "original",
  "raw",
]);
const SECRET_NAMED = /pass|secret|token|authori[sz]ation|cookie|credential|key/i;
const MAX_CAUSES = 5;

export interface LoggedError {
  type: string;
  message: string;
  stack?: string;
  cause?: LoggedError | string;
  aggregateErrors?: LoggedError[];
  [field: string]: unknown;
}

/** pino's `err` serializer: anything that is not an Error is logged as it is. */
export function loggableError(err: unknown): unknown {
  return isErrorLike(err) ? describeError(err, 0, new Set()) : err;
}

function describeError(err: Error, depth: number, seen: Set<unknown>): LoggedError {
  seen.add(err);
  const type = err.constructor?.name && err.constructor.name !== "Object" ? err.constructor.name : err.name;
  const message = scrubText(withoutQueryParameters(err.message ?? ""), isDatabaseError(err));
  const logged: LoggedError = { type, message };
  if (typeof err.stack === "string") logged.stack = [`${type}: ${message}`, ...err.stack.split("\n").filter((line) => /^\s+at /.test(line))].join("\n");
  for (const [field, value] of Object.entries(err)) {
    if (field === "cause" || field === "errors" || field === "message" || field === "stack") continue;
    if (VALUE_FIELDS.has(field) || SECRET_NAMED.test(field)) continue;
    if (typeof value === "string") logged[field] = field === "query" ? value : scrubText(value, false);
    else if (typeof value === "number" || typeof value === "boolean") logged[field] = value;
    // Objects are left out: there is no telling what they hold.
  }
  const { cause } = err as { cause?: unknown };
  if (cause !== undefined && !seen.has(cause)) {
    if (depth >= MAX_CAUSES) logged.cause = "(further causes left out)";
    else if (isErrorLike(cause)) logged.cause = describeError(cause, depth + 1, seen);
    else if (typeof cause === "string") logged.cause = scrubText(cause, false);
  }
  const inner = (err as { errors?: unknown }).errors;
  if (Array.isArray(inner) && depth < MAX_CAUSES) {
    logged.aggregateErrors = inner
      .filter((e): e is Error => isErrorLike(e) && !seen.has(e))
      .slice(0, 10)
      .map((e) => describeError(e, depth + 1, seen));
  }
  return logged;
}

/** drizzle's "Failed query: <sql>\nparams: <values>": the SQL (placeholders only) stays, the values go. */
export function withoutQueryParameters(message: string): string {
  return message.replace(/\nparams: [\s\S]*$/, "");
}

/**
 * Credentials in free text: a URL's user:password, an Authorization scheme's token, and values
 * shaped like credentials (the reviewers' rule, redactText). In a database error the value
 * PostgreSQL quotes at the end ("invalid input syntax for type uuid: "…"") goes too.
 */
export function scrubText(text: string, fromDatabase: boolean): string {
  let out = redactText(text)
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, "$1[redacted]@")
    .replace(/\b(Bearer|Basic|Token)\s+[^\s"',;]+/gi, "$1 [redacted]");
  if (fromDatabase) out = out.replace(/: ".*"$/s, ': "[redacted]"');
  return out;
}

/** PostgreSQL's errors (postgres.js, PGlite) carry a five-character SQLSTATE and a severity. */
function isDatabaseError(err: Error): boolean {
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && typeof severity === "string";
}

function isErrorLike(value: unknown): value is Error {
  return (
    value instanceof Error ||
    (typeof value === "object" && value !== null && typeof (value as Error).message === "string" && typeof (value as Error).stack === "string")
  );
}

/** An error as text for a terminal (the CLI's last words), with the same omissions as a log line. */
export function printableError(err: unknown): string {
  const logged = loggableError(err);
  if (typeof logged !== "object" || logged === null) return scrubText(String(err), false);
  const blocks: string[] = [];
  for (let e: LoggedError | string | undefined = logged as LoggedError; e !== undefined; e = typeof e === "string" ? undefined : e.cause) {
    const text = typeof e === "string" ? e : (e.stack ?? `${e.type}: ${e.message}`);
    blocks.push(blocks.length === 0 ? text : `caused by: ${text}`);
  }
  return blocks.join("\n");
}

/** A request path as logged: a one-time sign-in link carries its token in the path. */
export function loggablePath(path: unknown): unknown {
  return typeof path === "string" ? path.replace(/^(\/login\/)[^/?#]+/, "$1[redacted]") : path;
}
