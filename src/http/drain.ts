import type { Server, ServerResponse } from "node:http";
import type { Context, MiddlewareHandler } from "hono";

/**
 * A stopping replica as its HTTP doors see it. Once it begins, `/readyz` answers 503, long-polls
 * answer at once with what they have, and live streams end, so their clients ask again and a
 * proxy sends them to another replica. Requests that do work are left to finish.
 */
export class Drain {
  #draining = false;
  readonly #onBegin = new Set<() => void>();

  get draining(): boolean {
    return this.#draining;
  }

  begin(): void {
    if (this.#draining) return;
    this.#draining = true;
    const calls = [...this.#onBegin];
    this.#onBegin.clear();
    for (const call of calls) call();
  }

  /** Calls `fn` once when draining begins (at once if it has); returns what cancels that. */
  onBegin(fn: () => void): () => void {
    if (this.#draining) {
      fn();
      return () => undefined;
    }
    this.#onBegin.add(fn);
    return () => this.#onBegin.delete(fn);
  }
}

const DRAINS = new WeakMap<Request, Drain>();

/** Tells each request's handlers which drain to heed (waitUnlessDraining, onDrain). */
export function drainAware(drain: Drain): MiddlewareHandler {
  return async (c, next) => {
    DRAINS.set(c.req.raw, drain);
    await next();
  };
}

/**
 * Runs a long-poll's wait with a signal that aborts when its caller goes away or the replica
 * begins to drain: either way the wait answers with what it has. One listener per wait, removed
 * when it ends, so a replica that answers many waits keeps none of them.
 */
export async function waitUnlessDraining<T>(c: Context, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const request = c.req.raw.signal;
  const drain = DRAINS.get(c.req.raw);
  if (!drain) return wait(request);
  const stop = new AbortController();
  const abort = () => stop.abort();
  if (request.aborted) abort();
  else request.addEventListener("abort", abort, { once: true });
  const cancel = drain.onBegin(abort);
  try {
    return await wait(stop.signal);
  } finally {
    cancel();
    request.removeEventListener("abort", abort);
  }
}

/** For an answer that outlives its handler (a live stream): calls `end` when the replica begins to drain; returns what cancels that. */
export function onDrain(c: Context, end: () => void): () => void {
  return DRAINS.get(c.req.raw)?.onBegin(end) ?? (() => undefined);
}

export interface ClosingServer {
  /**
   * Stops accepting connections, closes idle keep-alive ones now and each busy one after its
   * answer, and waits for the last answer for at most `ms`; then cuts what is still open.
   * Resolves to how many answers were cut.
   */
  close(ms: number): Promise<number>;
}

/**
 * Tracks a Node HTTP server's answers from the start, so it can close without cutting one off.
 * Node's own close() leaves a busy keep-alive connection open after its answer, for the
 * client's next request, and then waits out its keep-alive timeout; here that answer says
 * `Connection: close` instead.
 */
export function closableServer(server: Server): ClosingServer {
  const open = new Set<ServerResponse>();
  let closing = false;
  // Before the app's own listener, so the header is set before any answer can be written.
  server.prependListener("request", (_request, response: ServerResponse) => {
    open.add(response);
    if (closing) response.setHeader("connection", "close");
    response.once("close", () => {
      open.delete(response);
      // An answer whose headers went out saying keep-alive (a live stream) leaves its connection idle.
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return {
    async close(ms) {
      closing = true;
      for (const response of open) if (!response.headersSent) response.setHeader("connection", "close");
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([
        closed.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), ms);
        }),
      ]);
      clearTimeout(timer);
      if (!late) return 0;
      const cut = open.size;
      server.closeAllConnections();
      await closed;
      return cut;
    },
  };
}
