import { nodeHttpClient, type HttpClient, type HttpClientAnswer } from "../adapters/node-http-client.ts";
import { nodeHttpPools } from "../adapters/read-only-http.ts";
import type { Outcome } from "../plan/outcome.ts";
import type { Claim } from "./execute-plan.ts";

/** The executor's side of `/v1/executor`: claim, heartbeat, report. */
export interface ExecutorServer {
  /** Long-polls for one approved plan; undefined when none came in time. */
  claim(signal?: AbortSignal): Promise<Claim | undefined>;
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
  const post = async (path: string, body?: unknown, signal?: AbortSignal) => {
    const deadline = AbortSignal.timeout(CALL_TIMEOUT_MS);
    const response = await fetchImpl(new URL(`${baseUrl.replace(/\/+$/, "")}/v1/executor${path}`), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      redirect: "manual",
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
    });
    if (response.status === 401) throw new ServerRefused("the server refused the executor token (COUNTERSIGN_EXECUTOR_TOKEN)");
    return response;
  };
  const leaseAnswer = async (response: HttpClientAnswer): Promise<boolean> => {
    if (response.ok) return true;
    if (response.status === 409) return false;
    throw new Error(`server answered HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
  };
  return {
    async claim(signal) {
      const response = await post("/claim", undefined, signal);
      if (response.status === 204) return undefined;
      if (!response.ok) throw new Error(`claim failed with HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
      return JSON.parse(await response.text()) as Claim;
    },
    heartbeat: async (claimToken) => leaseAnswer(await post(`/claims/${encodeURIComponent(claimToken)}/heartbeat`)),
    async report(claimToken, outcome) {
      const response = await post(`/claims/${encodeURIComponent(claimToken)}/report`, outcome);
      if (response.status >= 400 && response.status < 500 && response.status !== 409) throw new ReportRefused(response.status, await response.text());
      return leaseAnswer(response);
    },
  };
}
