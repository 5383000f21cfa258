/** A JSON value as it travels between agents, Countersign and targets. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Escapes one segment of a JSON Pointer (RFC 6901). */
export function pointerSegment(segment: string | number): string {
  return String(segment).replaceAll("~", "~0").replaceAll("/", "~1");
}

export function toPointer(path: readonly (string | number)[]): string {
  return path.map((s) => "/" + pointerSegment(s)).join("");
}

/**
 * Where a value nests deeper than `max` levels, or undefined. Iterative, so a hostile
 * document cannot overflow the stack while we look at it.
 */
export function findTooDeep(value: unknown, max: number): (string | number)[] | undefined {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (path.length >= max) return path;
    const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    for (const [key, child] of entries) stack.push({ value: child, path: [...path, key] });
  }
  return undefined;
}
