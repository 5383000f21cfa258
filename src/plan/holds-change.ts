import { isDeepStrictEqual } from "node:util";
import { listChanges } from "./changes.ts";
import { isJsonObject, type Json } from "./json.ts";

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
 * Whether `current` already holds the change a plan makes from `before` to `after`. Only the
 * fields the plan changes are compared: targets add fields of their own (ids, timestamps),
 * and those must not make an applied plan look unapplied. `current` undefined means absent.
 */
export function holdsChange(before: Json | null, after: Json | null, current: Json | undefined): boolean {
  if (after === null) return current === undefined;
  if (current === undefined) return false;
  return listChanges(before ?? undefined, after).every((change) => {
    if (change.path === "" && isJsonObject(change.to) && isJsonObject(current)) {
      // A whole document appears (create): every field it sets must be there as set.
      return Object.entries(change.to).every(([k, v]) => isDeepStrictEqual(current[k], v));
    }
    return isDeepStrictEqual(valueAt(current, change.path), change.to);
  });
}
