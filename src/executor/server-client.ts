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

export function executorServer(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch): ExecutorServer {
  const post = async (path: string, body?: unknown, signal?: AbortSignal) => {
    const response = await fetchImpl(`${baseUrl.replace(/\/+$/, "")}/v1/executor${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      ...(signal ? { signal } : {}),
    });
    if (response.status === 401) throw new ServerRefused("the server refused the executor token (COUNTERSIGN_EXECUTOR_TOKEN)");
    return response;
  };
  const leaseAnswer = async (response: Response): Promise<boolean> => {
    if (response.ok) return true;
    if (response.status === 409) return false;
    throw new Error(`server answered HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
  };
  return {
    async claim(signal) {
      const response = await post("/claim", undefined, signal);
      if (response.status === 204) return undefined;
      if (!response.ok) throw new Error(`claim failed with HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
      return (await response.json()) as Claim;
    },
    heartbeat: async (claimToken) => leaseAnswer(await post(`/claims/${encodeURIComponent(claimToken)}/heartbeat`)),
    async report(claimToken, outcome) {
      const response = await post(`/claims/${encodeURIComponent(claimToken)}/report`, outcome);
      if (response.status >= 400 && response.status < 500 && response.status !== 409) throw new ReportRefused(response.status, await response.text());
      return leaseAnswer(response);
    },
  };
}
