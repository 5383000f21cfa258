import { toPointer } from "./json.ts";

/**
 * Strings that parse as JSON but cannot be hashed or stored faithfully:
 * - a lone UTF-16 surrogate is not Unicode text: JCS canonicalization (RFC 8785) refuses it, so
 *   the plan could not be hashed, and PostgreSQL's jsonb refuses it too;
 * - U+0000 (NUL) is refused by PostgreSQL in both `text` and `jsonb`.
 * Refusing them at the door, naming where they are, is what keeps them from becoming a 500.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why this text cannot be stored (in a text or jsonb column) or hashed, or undefined when it can. */
export function whyUnstorableText(text: string): string | undefined {
  if (text.includes("\u0000")) return "contains a NUL character (U+0000), which cannot be stored";
  const m = LONE_SURROGATE.exec(text);
  if (m) return `contains a lone UTF-16 surrogate (U+${m[0].charCodeAt(0).toString(16).toUpperCase()}) at character ${m.index}, which is not Unicode text`;
  return undefined;
}

/** Whether text can be stored in a text column and hashed as UTF-8. */
export function isStorableText(text: string): boolean {
  return whyUnstorableText(text) === undefined;
}

/**
 * Every string (value or key) in a parsed JSON value that cannot be stored, with its JSON
 * Pointer; at most `max` of them. Iterative, and each entry links to its parent instead of
 * copying its path, so a target document nested thousands deep costs linear time, not quadratic.
 */
export function findUnstorable(value: unknown, max = 10): { path: string; message: string }[] {
  type Entry = { value: unknown; key: string | number; parent: Entry | undefined };
  const pathOf = (entry: Entry | undefined): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let e = entry; e?.parent; e = e.parent) path.push(e.key);
    return path.reverse();
  };
  const issues: { path: string; message: string }[] = [];
  const stack: Entry[] = [{ value, key: "", parent: undefined }];
  while (stack.length > 0 && issues.length < max) {
    const entry = stack.pop()!;
    const v = entry.value;
    if (typeof v === "string") {
      const why = whyUnstorableText(v);
      if (why) issues.push({ path: toPointer(pathOf(entry)), message: `the string ${why}` });
      continue;
    }
    if (typeof v !== "object" || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], key: i, parent: entry });
      continue;
    }
    const entries = Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const why = whyUnstorableText(key);
      if (why) {
        // The key itself cannot be named exactly in a pointer, so the message says which one.
        issues.push({ path: toPointer(pathOf(entry)), message: `a field name (${JSON.stringify(key).slice(0, 60)}) ${why}` });
        if (issues.length >= max) break;
        continue;
      }
      stack.push({ value: child, key, parent: entry });
    }
  }
  return issues;
}
