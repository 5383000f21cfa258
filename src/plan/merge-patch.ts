import { isJsonObject, type Json } from "./json.ts";

/**
 * JSON Merge Patch, RFC 7396 §2, without mutating either argument. Members are defined, not
 * assigned, so a member named "__proto__" stays data, as it does for the target applying it.
 */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isJsonObject(patch)) return patch;
  const result: { [key: string]: Json } = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete result[key];
    } else {
      const current = Object.hasOwn(result, key) ? result[key]! : null;
      Object.defineProperty(result, key, { value: applyMergePatch(current, value), enumerable: true, writable: true, configurable: true });
    }
  }
  return result;
}
