import type { ResourceState } from "./resource-state.ts";
import { listChanges, type Change } from "./changes.ts";
import { fingerprint } from "./fingerprint.ts";
import type { Json } from "./json.ts";
import type { ActionOutcome } from "./outcome.ts";
import type { HttpJsonPlanned as PlannedAction, Precondition } from "./schema.ts";

/**
 * The one rule for "has the world moved past this action?" for http.json, which its adapter's
 * revalidation applies (src/adapters/http-json-adapter.ts) for the executor, the server's
 * watcher and the Approve re-check alike: the action's
 * precondition is compared with a fresh read, and when it no longer holds the answer is the
 * stale action outcome that says what changed since the preview. Pure: the read is the caller's.
 */
export function preconditionHolds(precondition: Precondition, current: ResourceState): boolean {
  if ("etag" in precondition) return current.exists && current.etag === precondition.etag;
  if ("digest" in precondition) return current.exists && fingerprint(current.body) === precondition.digest;
  return !current.exists;
}

/** The version the plan was previewed against: its ETag, its digest, or null for "nothing there". */
export function expectedVersion(precondition: Precondition): string | null {
  if ("etag" in precondition) return precondition.etag;
  if ("digest" in precondition) return precondition.digest;
  return null;
}

/** The version a read found, in the same terms: the ETag when the target gives one, else the digest. */
export function currentVersion(current: ResourceState): string | null {
  return current.exists ? (current.etag ?? fingerprint(current.body)) : null;
}

/**
 * Undefined while the precondition holds; otherwise the stale outcome for action `index`:
 * the version expected and found, and the field-level changes from the previewed `before`
 * to what the target holds now (at most 200, as the outcome schema allows).
 */
export function driftOf(action: PlannedAction, index: number, before: Json | null, current: ResourceState): ActionOutcome | undefined {
  if (preconditionHolds(action.precondition, current)) return undefined;
  return staleOutcome(action, index, {
    expected: expectedVersion(action.precondition),
    now: currentVersion(current),
    changedSincePreview: listChanges(before ?? undefined, current.exists ? current.body : undefined).slice(0, 200),
  });
}

/**
 * The stale outcome of action `index` of any kind, from what its adapter's revalidation found
 * (the version expected and found, the changes since the preview): what the executor reports,
 * the watcher and the Approve re-check record, and reviewers are shown.
 */
export function staleOutcome(
  action: { target: string; path: string },
  index: number,
  found: { expected: string | null; now: string | null; changedSincePreview: Change[] },
): ActionOutcome {
  return {
    index,
    target: action.target,
    path: action.path,
    status: "stale",
    detail: `${action.target} ${action.path} changed since the preview`,
    expected: found.expected,
    now: found.now,
    changedSincePreview: found.changedSincePreview,
  };
}
