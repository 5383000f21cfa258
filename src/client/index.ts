/**
 * The TypeScript client agents use to reach Countersign (`countersign/client`). It proposes and
 * waits; nothing here can apply a change. It imports nothing: the wire types are generated into
 * ./wire-types.ts, and it needs only the standard `fetch` and Web Crypto (Node 20, Bun, Deno).
 * Its relative imports say `.js` so the emitted .d.ts resolves for any TypeScript a consumer has.
 */
import type { AuditEvent, ErrorBody, ErrorCode, Issue, Outcome, PlanRequest, PlanStatus, PlanView, UndoRequest } from "./wire-types.js";

export type * from "./wire-types.js";
/** What `submitPlan` takes: the plan request as sent, before the server trims and fills in defaults. */
export type PlanRequestInput = PlanRequest;
/**
 * One action of a plan, discriminated by `kind`: `HttpJsonAction` (a JSON resource over HTTP)
 * or `PostgresRowAction` (one row of a configured PostgreSQL table). A plan may mix kinds.
 */
export type ActionRequestInput = PlanRequest["actions"][number];
/** An audit event as `events()` returns it. */
export type AuditEventView = AuditEvent;
export { verifyWebhook } from "./webhook-signature.js";

/** Statuses a plan never leaves. */
export const FINAL_STATUSES = [
  "rejected",
  "expired",
  "cancelled",
  "applied",
  "failed",
  "stale",
  "superseded",
  "revoked",
] as const satisfies readonly PlanStatus[];
export type FinalStatus = (typeof FINAL_STATUSES)[number];

/** A refusal from the server, with its stable code (`plan_expired`, `preview_failed`, …). */
export class CountersignError extends Error {
  /** The server's code, or one of the client's own: `timeout` (waitForOutcome), `network` (unreachable). */
  readonly code: ErrorCode | "timeout" | "network";
  readonly status: number | undefined;
  readonly issues: Issue[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  /** Seconds the server asked to wait before retrying (its `Retry-After`), when it gave any: `rate_limited`, `database_unavailable`. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    code: CountersignError["code"],
    message: string,
    extra: { status?: number; issues?: Issue[]; details?: Record<string, unknown>; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = "CountersignError";
    this.code = code;
    this.status = extra.status;
    this.issues = extra.issues;
    this.details = extra.details;
    this.retryAfterSeconds = extra.retryAfterSeconds;
  }
}

/**
 * The agent is at one of its limits (HTTP 429): nothing was stored. Wait `retryAfterSeconds`
 * and submit again; `limit` is the config key that refused (e.g. `limits.plansPerMinute`).
 */
export class RateLimitedError extends CountersignError {
  declare readonly code: "rate_limited";
  declare readonly retryAfterSeconds: number;
  readonly limit: string | undefined;
  constructor(message: string, extra: { status?: number; details?: Record<string, unknown>; retryAfterSeconds: number }) {
    super("rate_limited", message, extra);
    this.name = "RateLimitedError";
    this.limit = typeof extra.details?.limit === "string" ? extra.details.limit : undefined;
  }
}

/** How a plan ended, with what an agent needs to act on it. */
export interface FinalOutcome {
  id: string;
  hash: string;
  status: FinalStatus;
  approvals: PlanView["approvals"];
  /** Why it was rejected (reject) or revoked (revoke), or why it did not apply (stale, failed, expired). */
  reason?: string;
  /** Per-action results from the executor (applied, stale, failed). */
  outcome?: Outcome;
  /**
   * The reviewer whose edit made this version, when waitForOutcome followed an edit of the plan
   * you submitted (its `id` is then the edited version's): what was applied is their values.
   */
  editedBy?: NonNullable<PlanView["plan"]["editedBy"]>;
  plan: PlanView;
}

export interface CountersignOptions {
  /** Countersign's base URL, e.g. http://localhost:3000. */
  url: string;
  /** The agent key (`countersign agents add NAME`). */
  key: string;
  fetch?: typeof fetch;
}

/** The longest a single long-poll waits; waitForOutcome loops over it. */
const LONG_POLL_SECONDS = 30;

export class Countersign {
  private readonly base: string;
  private readonly key: string;
  private readonly fetchImpl: typeof fetch;

  constructor(options: CountersignOptions) {
    this.base = options.url.replace(/\/+$/, "");
    this.key = options.key;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /**
   * Proposes a plan. Resolves once it is previewed and pending review: `preview.actions[i]` is
   * what reviewers see of `plan.actions[i]` (for a postgres.row action, the row's columns
   * before and after and the version read).
   */
  submitPlan(request: PlanRequestInput, options: { signal?: AbortSignal } = {}): Promise<PlanView> {
    return this.call("POST", "/v1/plans", request, options.signal);
  }

  getPlan(id: string, options: { signal?: AbortSignal } = {}): Promise<PlanView> {
    return this.call("GET", `/v1/plans/${encodeURIComponent(id)}`, undefined, options.signal);
  }

  /** Withdraws a pending plan. */
  cancel(id: string, options: { signal?: AbortSignal } = {}): Promise<PlanView> {
    return this.call("POST", `/v1/plans/${encodeURIComponent(id)}/cancel`, undefined, options.signal);
  }

  /**
   * Asks for one of your applied plans to be taken back: resolves with the undo, a new plan
   * (`plan.undoes` is the id) pending review like any other; wait for it with waitForOutcome.
   * Refused with `not_undoable`, `undo_open` (`details.planId`), `undo_target_changed` or `undo_refused`.
   */
  proposeUndo(id: string, request: UndoRequest = {}, options: { signal?: AbortSignal } = {}): Promise<PlanView> {
    return this.call("POST", `/v1/plans/${encodeURIComponent(id)}/undo`, request, options.signal);
  }

  async events(id: string, options: { signal?: AbortSignal } = {}): Promise<AuditEvent[]> {
    return (await this.call<{ events: AuditEvent[] }>("GET", `/v1/plans/${encodeURIComponent(id)}/events`, undefined, options.signal)).events;
  }

  /**
   * Waits until the plan reaches a final status (applied, rejected, expired, cancelled,
   * stale, failed, superseded, revoked) and returns it. A plan a reviewer edited before approving
   * is superseded by the edited version: that version is followed (and any later edit of it), and
   * its outcome returned with `editedBy`, unless `followEdits` is false. Throws
   * CountersignError("timeout") after `timeoutMs`, and the signal's reason when aborted.
   */
  async waitForOutcome(id: string, options: { signal?: AbortSignal; timeoutMs?: number; followEdits?: boolean } = {}): Promise<FinalOutcome> {
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let waitingOn = id;
    for (;;) {
      options.signal?.throwIfAborted();
      const left = deadline - Date.now();
      if (left <= 0) throw new CountersignError("timeout", `plan ${waitingOn} was still open after ${options.timeoutMs} ms`);
      const seconds = Math.max(0, Math.min(LONG_POLL_SECONDS, Math.floor(left / 1000)));
      const plan = await this.call<PlanView>("GET", `/v1/plans/${encodeURIComponent(waitingOn)}/wait?timeout=${seconds}`, undefined, options.signal);
      const edited = plan.status === "superseded" && options.followEdits !== false ? plan.supersededBy?.editedBy && plan.supersededBy : undefined;
      if (edited) {
        waitingOn = edited.id;
        continue;
      }
      if ((FINAL_STATUSES as readonly string[]).includes(plan.status)) return finalOutcome(plan);
      if (seconds === 0) await new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, deadline - Date.now()))));
    }
  }

  private async call<T>(method: string, path: string, body: unknown, signal: AbortSignal | undefined): Promise<T> {
    let response: Response;
    try {
      response = await this.fetchImpl(this.base + path, {
        method,
        headers: { authorization: `Bearer ${this.key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new CountersignError("network", `could not reach Countersign at ${this.base}: ${(err as Error).message}`);
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      throw new CountersignError("internal", `Countersign answered HTTP ${response.status} with a body that is not JSON`, { status: response.status });
    }
    if (!response.ok) {
      const error = (json as Partial<ErrorBody> | undefined)?.error;
      const retryAfterSeconds = retryAfter(response.headers.get("retry-after"), error?.details);
      const message = error?.message ?? `HTTP ${response.status}`;
      if (error?.code === "rate_limited") {
        throw new RateLimitedError(message, {
          status: response.status,
          retryAfterSeconds: retryAfterSeconds ?? 1,
          ...(error.details ? { details: error.details } : {}),
        });
      }
      throw new CountersignError(error?.code ?? "internal", message, {
        status: response.status,
        ...(error?.issues ? { issues: error.issues } : {}),
        ...(error?.details ? { details: error.details } : {}),
        ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      });
    }
    return json as T;
  }
}

/** Retry-After as whole seconds (delta-seconds or an HTTP date), else the body's `details.retryAfterSeconds`. */
function retryAfter(header: string | null, details: Record<string, unknown> | undefined): number | undefined {
  if (header !== null && /^\d+$/.test(header.trim())) return Math.max(1, Number(header.trim()));
  const date = header === null ? NaN : Date.parse(header);
  if (!Number.isNaN(date)) return Math.max(1, Math.ceil((date - Date.now()) / 1000));
  return typeof details?.retryAfterSeconds === "number" ? details.retryAfterSeconds : undefined;
}

function finalOutcome(plan: PlanView): FinalOutcome {
  const reason = plan.rejection?.reason ?? plan.revocation?.reason ?? plan.outcome?.reason;
  return {
    id: plan.id,
    hash: plan.hash,
    status: plan.status as FinalStatus,
    approvals: plan.approvals,
    ...(reason !== undefined ? { reason } : {}),
    ...(plan.outcome ? { outcome: plan.outcome } : {}),
    ...(plan.plan.editedBy ? { editedBy: plan.plan.editedBy } : {}),
    plan,
  };
}
