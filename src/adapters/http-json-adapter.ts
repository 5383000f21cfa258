import { HttpJsonTargetConfig as TargetConfig } from "./http-json-target.ts";
import { currentVersion, driftOf } from "../plan/drift.ts";
import { afterApplyMismatches, holdsChange } from "../plan/holds-change.ts";
import { HttpJsonAction, HttpJsonPlanned as PlannedAction } from "../plan/schema.ts";
import { refusalsFor } from "../policy/allowlist.ts";
import { AdapterError, type Revalidation, NOTHING_ALLOWED, type Adapter, type AdapterApplyResult, type ErrorClass, type TargetState } from "./adapter.ts";
import type { ResourceState } from "../plan/resource-state.ts";
import { previewHttpJson, readResource, TargetReadError } from "./http-json.ts";
import { applyHttpJson } from "./http-json-apply.ts";
import { nodeHttpClient, type HttpClient } from "./node-http-client.ts";
import { createReadOnlyHttp, nodeHttpPools, type ReadOnlyHttp } from "./read-only-http.ts";
import type { Json } from "../plan/json.ts";

type Action = import("zod").output<typeof HttpJsonAction>;

/**
 * `http.json` behind the adapter interface: the functions submit and the executor call today
 * (http-json.ts, http-json-apply.ts, plan/drift.ts, plan/holds-change.ts), wrapped with no
 * behaviour of their own. What the executor does between them (held → no write, the order of
 * checks) stays in src/executor/execute-plan.ts.
 *
 * Reads and writes go through node:http unless `deps` gives a client (tests give fetch, or a
 * ReadOnlyHttp): one set of kept-alive pools for all of this adapter's readers and writers.
 */
export function httpJsonAdapter(deps: { fetch?: typeof fetch; http?: ReadOnlyHttp } = {}): Adapter<Action, PlannedAction, TargetConfig> {
  const pools = nodeHttpPools();
  const write: HttpClient = deps.fetch ?? nodeHttpClient(pools);
  return {
    kind: "http.json",
    actionSchema: HttpJsonAction,
    plannedSchema: PlannedAction,
    targetSchema: TargetConfig,
    address: (_name, _target, action) => ({ op: action.op, path: action.path }),
    refusals: (name, target, actions) =>
      refusalsFor(
        name,
        target.allow,
        actions.map(({ index, action }) => ({ index, op: action.op, path: action.path, body: action.body })),
      ),
    openReader(name, target) {
      // The reader never holds the write credential, even in the executor's process.
      const { write: _write, ...readOnly } = target;
      const http = deps.http ?? createReadOnlyHttp(deps.fetch, undefined, pools);
      const read = (planned: PlannedAction): Promise<ResourceState> => guard(name, planned.path, () => readResource(http, name, readOnly, planned.path));
      return {
        async preview(action) {
          const { planned, preview } = await guard(name, action.path, () => previewHttpJson(http, readOnly, action));
          return { planned, preview: { ...preview, precondition: preconditionName(planned) } };
        },
        read: async (planned) => toTargetState(await read(planned)),
        revalidate: async (planned, seen) => judgeHttpJson(planned, seen, toTargetState(await read(planned))),
        async verify(planned, seen) {
          const current = await read(planned);
          const mismatches = afterApplyMismatches(seen.before, seen.after, current.exists ? current.body : undefined);
          return mismatches.length === 0 ? { verified: true } : { verified: false, mismatches };
        },
        close: async () => {},
      };
    },
    openWriter(name, target) {
      return {
        timeoutMs: target.timeoutMs,
        async apply(planned, idempotencyKey, deadline): Promise<AdapterApplyResult> {
          if (deadline !== undefined && deadline - performance.now() < 1)
            return { status: "expired", detail: `${planned.op} ${planned.path} on '${name}' was not sent: the deadline had passed` };
          const result = await applyHttpJson(write, name, target, planned, idempotencyKey, deadline);
          switch (result.status) {
            case "applied":
              return { status: "applied" };
            case "stale":
              return { status: "stale", detail: result.detail };
            case "uncertain":
              return { status: "uncertain", detail: result.detail };
            case "failed":
              return { status: "failed", errorClass: classOfStatus(result.httpStatus), detail: result.detail };
          }
        },
        close: async () => {},
      };
    },
    classify: classifyHttpJsonError,
    judge: judgeHttpJson,
    describe: (name, target) => ({
      reaches: target.baseUrl,
      lines: [
        target.allow
          ? `may propose: ops ${target.allow.ops.join(", ")} on ${target.allow.paths.join(", ")}` +
            `${target.allow.maxActions ? `, at most ${target.allow.maxActions} actions` : ""}${target.allow.maxBodyBytes ? `, bodies ≤ ${target.allow.maxBodyBytes} bytes` : ""}`
          : NOTHING_ALLOWED,
        `precondition: ${target.precondition === "etag" ? "etag (the target's ETag, sent as If-Match on write)" : "digest (a digest of the state read; weaker: the target cannot refuse a racing write)"} (targets.${name}.precondition)`,
      ],
    }),
  };
}

/**
 * The drift rule (plan/drift.ts) on a state read: held when the target already has the change,
 * else stale unless the precondition holds. The version read is the ETag, or the digest of the
 * body when the target gives none (toTargetState), which is what the rule compares.
 */
function judgeHttpJson(planned: PlannedAction, seen: { before: Json | null; after: Json | null }, current: TargetState): Revalidation {
  if (holdsChange(seen.before, seen.after, current.exists ? current.body : undefined)) return { state: "held" };
  const stale = driftOf(planned, 0, seen.before, current.exists ? { exists: true, body: current.body, etag: current.version } : { exists: false });
  if (!stale) return { state: "ready" };
  return { state: "stale", expected: stale.expected ?? null, now: stale.now ?? null, changedSincePreview: stale.changedSincePreview ?? [] };
}

function preconditionName(planned: PlannedAction): string {
  return "etag" in planned.precondition ? "etag" : "digest" in planned.precondition ? "digest" : "absent";
}

function toTargetState(state: ResourceState): TargetState {
  return state.exists ? { exists: true, body: state.body, version: currentVersion(state) } : { exists: false };
}

async function guard<T>(name: string, path: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new AdapterError(classifyHttpJsonError(err), name, err instanceof Error ? err.message : String(err), path, { cause: err });
  }
}

/**
 * No answer, 5xx, 408 and 429 may pass; anything else the target said (4xx, a redirect, a
 * document that is not JSON or has no ETag) will be said again.
 */
export function classifyHttpJsonError(err: unknown): ErrorClass {
  if (err instanceof AdapterError) return err.errorClass;
  if (err instanceof TargetReadError)
    return err.answer ? classOfStatus(err.answer.status) : /did not answer|unreachable/.test(err.message) ? "transient" : "permanent";
  return "permanent";
}

function classOfStatus(status: number | undefined): ErrorClass {
  if (status === undefined) return "permanent";
  return status >= 500 || status === 408 || status === 429 ? "transient" : "permanent";
}
