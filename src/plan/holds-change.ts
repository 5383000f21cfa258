import { isDeepStrictEqual } from "node:util";
import { listChanges } from "./changes.ts";
import { isJsonObject, pointerSegment, type Json } from "./json.ts";

/** The value at a JSON Pointer, or undefined when nothing is there. */
export function valueAt(doc: Json | undefined, pointer: string): Json | undefined {
  if (pointer === "") return doc;
  let node: Json | undefined = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    // RFC 6901: an array index is "0" or digits without a leading zero, nothing looser.
    if (Array.isArray(node)) node = /^(0|[1-9]\d*)$/.test(key) ? node[Number(key)] : undefined;
    else if (isJsonObject(node)) node = Object.hasOwn(node, key) ? node[key] : undefined;
    else return undefined;
  }
  return node;
}

/**
 * Whether `current` already holds the change a plan makes from `before` to `after`: the
 * executor's "already held" check before writing. The same rule as the verification after a
 * write: no field of the plan's change is missing from the target.
 */
export function holdsChange(before: Json | null, after: Json | null, current: Json | undefined): boolean {
  return afterApplyMismatches(before, after, current).length === 0;
}

/**
 * One field where the target does not hold what the preview said it would (after the write,
 * or already before it). `expected` is the previewed value, `actual` what the target has; a
 * missing one means the field is absent (as `from`/`to` in a change).
 */
export interface AfterApplyMismatch {
  path: string;
  expected?: Json;
  actual?: Json;
}

/** As many mismatches as an outcome reports, like `changedSincePreview`. */
export const MAX_MISMATCHES = 200;

/**
 * Where `current` (the target as read, `undefined` when absent) differs from the previewed
 * after-state, over the fields the plan changes (before → after) only: targets add fields of
 * their own (ids, timestamps), and those must not make an applied plan look unapplied. Empty
 * when the target holds the change. Pure.
 */
export function afterApplyMismatches(before: Json | null, after: Json | null, current: Json | undefined): AfterApplyMismatch[] {
  if (after === null) return current === undefined ? [] : [{ path: "", actual: current }];
  if (current === undefined) return [{ path: "", expected: after }];
  const out: AfterApplyMismatch[] = [];
  for (const change of listChanges(before ?? undefined, after)) {
    if (change.path === "" && isJsonObject(change.to) && isJsonObject(current)) {
      // A whole document appears (create): every field it sets must be there as set.
      for (const [key, value] of Object.entries(change.to)) compare(`/${pointerSegment(key)}`, value, current, out);
    } else {
      compare(change.path, change.to, current, out);
    }
    if (out.length >= MAX_MISMATCHES) return out.slice(0, MAX_MISMATCHES);
  }
  return out;
}

function compare(path: string, expected: Json | undefined, current: Json, out: AfterApplyMismatch[]): void {
  const actual = valueAt(current, path);
  if (isDeepStrictEqual(actual, expected)) return;
  const mismatch: AfterApplyMismatch = { path };
  if (expected !== undefined) mismatch.expected = expected;
  if (actual !== undefined) mismatch.actual = actual;
  out.push(mismatch);
}
