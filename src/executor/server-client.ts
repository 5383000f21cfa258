import type { z } from "zod";
import { nodeHttpClient, type HttpClient } from "../adapters/node-http-client.ts";
import { nodeHttpPools } from "../adapters/read-only-http.ts";
import type { Outcome } from "../plan/outcome.ts";
import { randomBytes } from "node:crypto";
import { Claim, CLAIM_KID_PARAM, EXECUTOR_ID_HEADER, GrantKeys } from "../contract/executor-api.ts";

/** The executor's side of `/v1/executor`: the grant keys, claim, heartbeat, report. */
export interface ExecutorServer {
  /** The keys the server signs grants with; undefined when the server does not say (a version without `GET /v1/executor/keys`). */
  keys(signal?: AbortSignal): Promise<GrantKeys | undefined>;
  /** Long-polls for one approved plan whose grant one of `kids` signed; undefined when none came in time. */
  claim(kids: readonly string[], signal?: AbortSignal): Promise<Claim | undefined>;
  /** Extends the lease; false when the lease was lost (someone else holds the plan now). */
  heartbeat(claimToken: string): Promise<boolean>;
  /** Closes the claim with the outcome; false when the lease was lost. Throws ReportRefused for a permanent 4xx. */
  report(claimToken: string, outcome: Outcome): Promise<boolean>;
}

export class ServerRefused extends Error {}

/**
 * The server answered a report with a 4xx that resending cannot change (the outcome is invalid,
 * too large or not JSON). Unlike a network error or a 5xx, retrying it would loop forever.
 */
export class ReportRefused extends Error {
  readonly status: number;
  constructor(status: number, body: string) {
    super(`the server refused the report with HTTP ${status}: ${body.slice(0, 300)}`);
    this.name = "ReportRefused";
    this.status = status;
  }
}

/**
 * How long any call may take before it is given up (and the loop or the report retries): what
 * undici's headers and body timeouts gave fetch, so a server that vanished without closing the
 * connection does not hold the executor for good. A claim's long-poll is 25 s at most.
 */
const CALL_TIMEOUT_MS = 300_000;

/**
 * The executor's client of the server, on node:http by default (`nodeHttpClient`): a claim's
 * answer starts the click's last leg, and reading it took 0.5–1 ms through fetch, 0.13 through this.
 */
export function executorServer(baseUrl: string, token: string, fetchImpl: HttpClient = nodeHttpClient(nodeHttpPools())): ExecutorServer {
  // Names this process on every call, so the server counts the executors connected.
  const executorId = randomBytes(12).toString("base64url");
  /** One call, its answer read whole; the deadline covers the body too. */
  const call = async (method: "GET" | "POST", path: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; ok: boolean; text: string }> => {
    // Its own controller, not AbortSignal.any over the executor's long-lived stop signal: one
    // listener per call, removed when the call ends.
    const call = new AbortController();
    const stop = () => call.abort(signal?.reason);
    const timer = setTimeout(() => call.abort(new DOMException(`the server did not answer within ${CALL_TIMEOUT_MS} ms`, "TimeoutError")), CALL_TIMEOUT_MS);
    if (signal?.aborted) stop();
    else signal?.addEventListener("abort", stop, { once: true });
    try {
      const response = await fetchImpl(new URL(`${baseUrl.replace(/\/+$/, "")}/v1/executor${path}`), {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", [EXECUTOR_ID_HEADER]: executorId },
        redirect: "manual",
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: call.signal,
      });
      if (response.status === 401) throw new ServerRefused("the server refused the executor token (COUNTERSIGN_EXECUTOR_TOKEN)");
      return { status: response.status, ok: response.ok, text: await response.text() };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
    }
  };
  const post = (path: string, body?: unknown, signal?: AbortSignal) => call("POST", path, body, signal);
  const leaseAnswer = (response: { status: number; ok: boolean; text: string }): boolean => {
    if (response.ok) return true;
    if (response.status === 409) return false;
    throw new Error(`server answered HTTP ${response.status}: ${response.text.slice(0, 300)}`);
  };
  return {
    async keys(signal) {
      const response = await call("GET", "/keys", undefined, signal);
      if (response.status === 404) return undefined;
      if (!response.ok) throw new Error(`reading the server's grant keys failed with HTTP ${response.status}: ${response.text.slice(0, 300)}`);
      return parsed(GrantKeys, response.text, "list of grant keys");
    },
    async claim(kids, signal) {
      const query = new URLSearchParams(kids.map((kid): [string, string] => [CLAIM_KID_PARAM, kid]));
      const response = await post(`/claim${kids.length > 0 ? `?${query}` : ""}`, undefined, signal);
      if (response.status === 204) return undefined;
      if (!response.ok) throw new Error(`claim failed with HTTP ${response.status}: ${response.text.slice(0, 300)}`);
      return parsed(Claim, response.text, "claim");
    },
    heartbeat: async (claimToken) => leaseAnswer(await post(`/claims/${encodeURIComponent(claimToken)}/heartbeat`)),
    async report(claimToken, outcome) {
      const response = await post(`/claims/${encodeURIComponent(claimToken)}/report`, outcome);
      if (response.status >= 400 && response.status < 500 && response.status !== 409) throw new ReportRefused(response.status, response.text);
      return leaseAnswer(response);
    },
  };
}

/** A body as the server sent it, checked against the executor API's schema: one that does not match is refused by what is wrong. */
function parsed<S extends z.ZodType>(schema: S, text: string, what: string): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`the server's ${what} is not JSON: ${text.slice(0, 200)}`);
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new Error(`the server's ${what} does not match the executor API: /${issue.path.join("/")} ${issue.message}`);
  }
  return result.data;
}
