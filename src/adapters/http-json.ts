import type { ResourceState } from "../plan/resource-state.ts";
import type { HttpJsonServerTarget as ServerTarget } from "./http-json-target.ts";
import { listChanges } from "../plan/changes.ts";
import { fingerprint } from "../plan/fingerprint.ts";
import type { Json } from "../plan/json.ts";
import { parseHashableJson } from "../plan/faithful-json.ts";
import { applyMergePatch } from "../plan/merge-patch.ts";
import type { ActionPreview } from "../contract/agent-api.ts";
import type { HttpJsonAction, HttpJsonPlanned as PlannedAction, Precondition } from "../plan/schema.ts";
import type { HttpAnswer, ReadOnlyHttp } from "./read-only-http.ts";
import { targetUrl } from "./target-url.ts";

type ActionRequest = import("zod").output<typeof HttpJsonAction>;

/** Why a target could not be previewed, with what the target answered, for the agent to act on. */
export class TargetReadError extends Error {
  readonly target: string;
  readonly path: string;
  readonly answer: { status: number; body: string } | undefined;
  constructor(target: string, path: string, message: string, answer?: { status: number; body: string }) {
    super(message);
    this.name = "TargetReadError";
    this.target = target;
    this.path = path;
    this.answer = answer;
  }
}

/** GET the resource with the read credential. The state the preview and, later, revalidation compare against. */
export async function readResource(http: ReadOnlyHttp, name: string, target: ServerTarget, path: string): Promise<ResourceState> {
  const url = targetUrl(target.baseUrl, path);
  let answer: HttpAnswer;
  try {
    answer = await http.get(url, target.read.headers, target.timeoutMs);
  } catch (err) {
    const cause = err instanceof Error && err.name === "TimeoutError" ? `did not answer within ${target.timeoutMs} ms` : `is unreachable (${describe(err)})`;
    throw new TargetReadError(name, path, `target '${name}' ${cause}`);
  }
  const shown = { status: answer.status, body: answer.text.slice(0, 2000) };
  if (answer.status === 404 || answer.status === 410) return { exists: false };
  if (answer.status >= 300 && answer.status < 400) {
    throw new TargetReadError(name, path, `target '${name}' redirected ${path} (HTTP ${answer.status}); Countersign does not follow redirects`, shown);
  }
  if (answer.status !== 200) {
    throw new TargetReadError(name, path, `target '${name}' answered HTTP ${answer.status} for GET ${path}`, shown);
  }
  if (answer.truncated) throw new TargetReadError(name, path, `target '${name}' returned more than 1 MiB for ${path}`);
  // A document that cannot be hashed or stored exactly is refused, never rounded or retried.
  const parsed = parseHashableJson(answer.text);
  if (!parsed.ok && parsed.kind === "syntax") throw new TargetReadError(name, path, `target '${name}' did not return JSON for ${path}`, shown);
  if (!parsed.ok)
    throw new TargetReadError(
      name,
      path,
      `target '${name}' returned a document for ${path} that cannot be hashed exactly: at ${parsed.pointer || "/"}, ${parsed.message}`,
    );
  const body: Json = parsed.value;
  const etag = answer.headers.get("etag");
  if (!etag && target.precondition !== "digest") {
    throw new TargetReadError(
      name,
      path,
      `target '${name}' gave no ETag for ${path}; Countersign needs one to detect changes before applying (or set targets.${name}.precondition: digest, which is weaker)`,
      shown,
    );
  }
  return { exists: true, body, etag };
}

/** The state an action leaves behind, computed from the state it starts from. Pure. */
export function plannedAfter(action: ActionRequest, before: Json | null): Json | null {
  switch (action.op) {
    case "merge":
      return applyMergePatch(before ?? {}, action.body ?? null);
    case "replace":
      return action.body ?? null;
    case "create":
      return action.body ?? null;
    case "delete":
      return null;
  }
}

/**
 * Preview one `http.json` action: read the target, compute the after-state and the field
 * changes, and capture the precondition the executor will insist on.
 */
export async function previewHttpJson(
  http: ReadOnlyHttp,
  target: ServerTarget,
  action: ActionRequest,
): Promise<{ planned: PlannedAction; preview: ActionPreview }> {
  const state = await readResource(http, action.target, target, action.path);
  let precondition: Precondition;
  let before: Json | null;
  if (action.op === "create") {
    if (state.exists)
      throw new TargetReadError(
        action.target,
        action.path,
        `'create' expects nothing at ${action.path} on '${action.target}', but a resource exists (ETag ${state.etag}); use 'replace' or 'merge'`,
      );
    precondition = { absent: true };
    before = null;
  } else {
    if (!state.exists)
      throw new TargetReadError(action.target, action.path, `target '${action.target}' has nothing at ${action.path} (HTTP 404); use op 'create' to make it`, {
        status: 404,
        body: "",
      });
    precondition = state.etag ? { etag: state.etag } : { digest: fingerprint(state.body) };
    before = state.body;
  }
  const after = plannedAfter(action, before);
  const planned: PlannedAction = {
    kind: action.kind,
    target: action.target,
    path: action.path,
    op: action.op,
    ...(action.body !== undefined ? { body: action.body } : {}),
    precondition,
    beforeDigest: fingerprint(before),
    afterDigest: fingerprint(after),
  };
  const preview: ActionPreview = {
    target: action.target,
    path: action.path,
    op: action.op,
    before,
    after,
    version: state.exists ? state.etag : null,
    precondition: "absent" in precondition ? "absent" : "etag" in precondition ? "etag" : "digest",
    changes: listChanges(before ?? undefined, after ?? undefined),
  };
  return { planned, preview };
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
