import diff from "microdiff";
import { toPointer, type Json } from "./json.ts";

/** One field that a plan changes: where (JSON Pointer), what it was, what it becomes. Absent is `undefined`. */
export interface Change {
  path: string;
  from?: Json;
  to?: Json;
}

/**
 * The field-by-field difference between two states, as people read it in a review.
 * Whole documents appearing or disappearing (create, delete) are one change at the root.
 */
export function listChanges(before: Json | undefined, after: Json | undefined): Change[] {
  const bothContainers =
    typeof before === "object" && before !== null && typeof after === "object" && after !== null &&
    Array.isArray(before) === Array.isArray(after);
  if (!bothContainers) {
    if (JSON.stringify(before) === JSON.stringify(after)) return [];
    return [withDefined({ path: "", from: before, to: after })];
  }
  return diff(before as Record<string, unknown>, after as Record<string, unknown>).map((d) =>
    withDefined({
      path: toPointer(d.path),
      from: d.type === "CREATE" ? undefined : (d.oldValue as Json),
      to: d.type === "REMOVE" ? undefined : (d.value as Json),
    }),
  );
}

function withDefined(change: Change): Change {
  const out: Change = { path: change.path };
  if (change.from !== undefined) out.from = change.from;
  if (change.to !== undefined) out.to = change.to;
  return out;
}
