import { isJsonObject, type Json } from "./json.ts";

/** JSON Merge Patch, RFC 7396 §2, without mutating either argument. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isJsonObject(patch)) return patch;
  const result: { [key: string]: Json } = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key] ?? null, value);
  }
  return result;
}
