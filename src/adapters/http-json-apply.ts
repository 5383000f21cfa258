import type { HttpJsonTargetConfig as TargetConfig } from "./http-json-target.ts";
import type { HttpJsonPlanned as PlannedAction } from "../plan/schema.ts";
import type { HttpClient, HttpClientAnswer } from "./node-http-client.ts";
import { targetUrl } from "./target-url.ts";

export type ApplyResult =
  | { status: "applied"; httpStatus: number; etag: string | null }
  | { status: "stale"; httpStatus: number; detail: string }
  | { status: "failed"; httpStatus?: number; detail: string }
  /**
   * The write may or may not have happened: no answer (timeout, connection refused or dropped),
   * or a 2xx whose body broke off or is not JSON (a proxy's page is not the target's word). The
   * executor re-reads the target to settle it, never records it as applied or failed unseen.
   */
  | { status: "uncertain"; httpStatus?: number; detail: string };

/**
 * Writes one `http.json` action with the target's own precondition, so that a write based on a
 * state that has since moved is refused by the target itself: If-Match with the version the
 * preview read, If-None-Match: * for a create. Only the executor calls this. The request's
 * timeout is the target's `timeoutMs`, cut to what is left before `deadline` (a
 * `performance.now()` instant, the grant's expiry) when that is less.
 */
export async function applyHttpJson(
  fetchImpl: HttpClient,
  name: string,
  target: TargetConfig,
  action: PlannedAction,
  idempotencyKey: string,
  deadline = Number.POSITIVE_INFINITY,
): Promise<ApplyResult> {
  if (!target.write) return { status: "failed", detail: `target '${name}' has no write credential configured` };
  const url = targetUrl(target.baseUrl, action.path);
  const headers: Record<string, string> = { accept: "application/json", "idempotency-key": idempotencyKey, ...target.write.headers };
  // A digest precondition was checked by re-reading just before; the target has nothing to match.
  if ("etag" in action.precondition) headers["if-match"] = action.precondition.etag;
  else if ("absent" in action.precondition) headers["if-none-match"] = "*";
  let method: string;
  let body: string | undefined;
  switch (action.op) {
    case "merge":
      method = "PATCH";
      headers["content-type"] = "application/merge-patch+json";
      body = JSON.stringify(action.body);
      break;
    case "replace":
    case "create":
      method = "PUT";
      headers["content-type"] = "application/json";
      body = JSON.stringify(action.body);
      break;
    case "delete":
      method = "DELETE";
      break;
  }
  const timeoutMs = Math.max(1, Math.min(target.timeoutMs, Math.floor(deadline - performance.now())));
  let response: HttpClientAnswer;
  try {
    response = await fetchImpl(url, { method, headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs), ...(body !== undefined ? { body } : {}) });
  } catch (err) {
    return {
      status: "uncertain",
      detail: `${method} ${action.path} on '${name}' got no answer (${describe(err, timeoutMs)}); the write may or may not have happened`,
    };
  }
  let whole: string;
  try {
    whole = await response.text();
  } catch (err) {
    if (response.ok)
      return {
        status: "uncertain",
        httpStatus: response.status,
        detail: `${method} ${action.path} on '${name}' answered HTTP ${response.status}, but the answer broke off (${describe(err, timeoutMs)})`,
      };
    whole = "";
  }
  const text = whole.slice(0, 500);
  if (response.ok) {
    if (whole.trim() !== "" && !isJson(whole)) {
      return {
        status: "uncertain",
        httpStatus: response.status,
        detail: `${method} ${action.path} on '${name}' answered HTTP ${response.status} with a body that is not JSON: ${text}`.trim(),
      };
    }
    return { status: "applied", httpStatus: response.status, etag: response.headers.get("etag") };
  }
  if (response.status === 412 || response.status === 409) {
    return {
      status: "stale",
      httpStatus: response.status,
      detail: `target '${name}' refused ${method} ${action.path}: it changed since the preview (HTTP ${response.status}) ${text}`.trim(),
    };
  }
  return {
    status: "failed",
    httpStatus: response.status,
    detail: `target '${name}' answered HTTP ${response.status} to ${method} ${action.path}: ${text}`.trim(),
  };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === "TimeoutError") return `timed out after ${timeoutMs} ms`;
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
