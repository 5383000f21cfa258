import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import type { Logger } from "pino";

/** An incoming X-Request-Id is kept when it looks like an id (a proxy's, a client's); anything else is replaced. */
const SANE_ID = /^[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,127}$/;

export function requestIdOf(header: string | undefined): string {
  return header !== undefined && SANE_ID.test(header) ? header : randomUUID();
}

/** Probes answer often and say nothing new: their lines are debug, every other request's info. */
const PROBES = new Set(["/healthz", "/readyz", "/metrics"]);

const LOGGERS = new WeakMap<Request, Logger>();
const IDS = new WeakMap<Request, string>();
const NOTES = new WeakMap<Request, Record<string, unknown>>();

/** The request's logger (with its requestId); the app's own outside a request. */
export function requestLogger(c: Context, fallback: Logger): Logger {
  return LOGGERS.get(c.req.raw) ?? fallback;
}

/** The request's id, as it is answered in X-Request-Id; undefined outside requestIds(). */
export function requestIdFor(c: Context): string | undefined {
  return IDS.get(c.req.raw);
}

/**
 * Adds facts to the request's one log line (e.g. the plan a submit stored), so a request that
 * does one thing says so in one line instead of a second line of its own. Method, path, status
 * and ms always win over a note of the same name.
 */
export function noteOnRequestLine(c: Context, fields: Record<string, unknown>): void {
  NOTES.set(c.req.raw, { ...NOTES.get(c.req.raw), ...fields });
}

/**
 * Gives each request an id (the incoming X-Request-Id when sane), answers it as X-Request-Id, and
 * writes one log line per request through a pino child logger carrying it, so an operator can
 * find a request's line (and its error's) from the id a client or proxy reports.
 */
export function requestIds(logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const requestId = requestIdOf(c.req.header("x-request-id"));
    const log = logger.child({ requestId });
    LOGGERS.set(c.req.raw, log);
    IDS.set(c.req.raw, requestId);
    const started = performance.now();
    await next();
    // An answer written straight to Node's response (a Slack ack) carried its id already.
    if (!(c.env as { outgoing?: ServerResponse } | undefined)?.outgoing?.headersSent) answerHeader(c, "X-Request-Id", requestId);
    const line = { ...NOTES.get(c.req.raw), method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) };
    if (PROBES.has(c.req.path)) log.debug(line, "request");
    else log.info(line, "request");
  };
}

/**
 * Sets a header on the answer a handler made. hono's `c.header()` after the handler rebuilds the
 * answer around its body as a web stream (undici's Response, a ReadableStream and its reader), so
 * @hono/node-server cannot then write a string body with its headers at once: that costs ~2 % of
 * `serve`'s samples at intake, and a second socket write per answer. Every answer here is made
 * per request (its headers are its own), so they are set in place; an answer whose headers are
 * immutable (one passed on from fetch) still goes through `c.header()`.
 */
function answerHeader(c: Context, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.header(name, value);
  }
}
