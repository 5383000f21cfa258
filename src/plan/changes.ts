import { isDeepStrictEqual } from "node:util";
import { isJsonObject, toPointer, type Json } from "./json.ts";

/** One field that a plan changes: where (JSON Pointer), what it was, what it becomes. Absent is `undefined`. */
export interface Change {
  path: string;
  from?: Json;
  to?: Json;
}

/**
 * The field-by-field difference between two states, as people read it in a review. Objects
 * and arrays are walked; a value whose type changes, and a whole document appearing or
 * disappearing (create, delete), is one change at its path.
 *
 * Written here rather than taken from a diff library: the ones we tried test membership with
 * `in`, which hides fields named like Object.prototype members ("constructor", "toString") —
 * exactly what a reviewer must not miss.
 */
export function listChanges(before: Json | undefined, after: Json | undefined): Change[] {
  const changes: Change[] = [];
  walk(before, after, [], changes);
  return changes;
}

function walk(before: Json | undefined, after: Json | undefined, path: (string | number)[], out: Change[]): void {
  if (isJsonObject(before) && isJsonObject(after)) {
    for (const key of Object.keys(before)) {
      walk(before[key], Object.hasOwn(after, key) ? after[key] : undefined, [...path, key], out);
    }
    for (const key of Object.keys(after)) {
      if (!Object.hasOwn(before, key)) walk(undefined, after[key], [...path, key], out);
    }
    return;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    for (let i = 0; i < Math.max(before.length, after.length); i++) {
      walk(i < before.length ? before[i] : undefined, i < after.length ? after[i] : undefined, [...path, i], out);
    }
    return;
  }
  if (before === undefined && after === undefined) return;
  if (before !== undefined && after !== undefined && isDeepStrictEqual(before, after)) return;
  const change: Change = { path: toPointer(path) };
  if (before !== undefined) change.from = before;
  if (after !== undefined) change.to = after;
  out.push(change);
}
