import { isDeepStrictEqual } from "node:util";
import { listChanges } from "./changes.ts";
import { valueAt } from "./holds-change.ts";
import { isJsonObject, pointerSegment, type Json } from "./json.ts";

/**
 * One field where the target, re-read after the write, does not hold what the preview said it
 * would. `expected` is the previewed value, `actual` what the target has; a missing one means
 * the field is absent (as `from`/`to` in a change).
 */
export interface AfterApplyMismatch {
  path: string;
  expected?: Json;
  actual?: Json;
}

/** As many mismatches as an outcome reports, like `changedSincePreview`. */
export const MAX_MISMATCHES = 200;

/**
 * Where `current` (the target re-read, `undefined` when absent) differs from the previewed
 * after-state, over the fields the plan changes (before → after) only: targets add fields of
 * their own (ids, timestamps) that must not count as drift. Empty when the target holds the
 * change. Pure; the executor's verify-after-apply and its "already held" check both read it.
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
