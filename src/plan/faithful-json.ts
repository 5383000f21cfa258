import { findTooDeep, toPointer } from "./json.ts";
import type { Json } from "./json.ts";
import { findUnstorable } from "./storable.ts";

/**
 * JSON whose every number means, as a double, exactly what its text says.
 *
 * `JSON.parse` silently rounds: `12345678901234567890` becomes 12345678901234567000 and
 * `1e400` becomes Infinity (which then hashes as `null`). A reviewer would approve a number the
 * agent never sent, or a target's record would be hashed as something it does not hold. So each
 * number token is checked against the raw text, before anyone looks at the parsed value.
 *
 * The rule is "the value a reviewer sees equals the value the text meant": the reviewer sees the
 * double's shortest form (`String(n)`, which is also what JCS hashes), so a token is faithful when
 * its exact decimal value equals that form's. `1.0`, `1e2`, `-0` and `0.10` are faithful (they
 * show as 1, 100, 0 and 0.1: same value, other spelling); `12345678901234567890`,
 * `1.00000000000000000001`, `1e400` and `1e-400` are not.
 */

export type FaithfulParse =
  | { ok: true; value: Json }
  | { ok: false; kind: "syntax"; message: string }
  | { ok: false; kind: "number"; pointer: string; token: string; message: string };

/** Parses JSON text, refusing syntax errors and numbers a double cannot hold exactly. */
export function parseFaithfulJson(text: string): FaithfulParse {
  let value: Json;
  try {
    value = JSON.parse(text) as Json;
  } catch (err) {
    return { ok: false, kind: "syntax", message: (err as Error).message };
  }
  const found = findUnfaithfulNumber(text);
  if (found) {
    return {
      ok: false,
      kind: "number",
      pointer: found.pointer,
      token: found.token,
      message: `the number ${abbreviate(found.token)} cannot be held exactly (it would read as ${String(Number(found.token))}); send it as a string`,
    };
  }
  return { ok: true, value };
}

/**
 * How deep a target's document may nest. Hashing (JCS) recurses, so without a bound a hostile
 * target could overflow the stack; real records are nowhere near this.
 */
export const MAX_DOCUMENT_DEPTH = 256;

/**
 * Parses a document Countersign will hash and store (a target's record): faithful numbers, no
 * string that cannot be stored, and bounded nesting. Anything else names where it goes wrong.
 */
export function parseHashableJson(
  text: string,
): { ok: true; value: Json } | { ok: false; kind: "syntax"; message: string } | { ok: false; kind: "value"; pointer: string; message: string } {
  const parsed = parseFaithfulJson(text);
  if (!parsed.ok) return parsed.kind === "syntax" ? parsed : { ok: false, kind: "value", pointer: parsed.pointer, message: parsed.message };
  const deep = findTooDeep(parsed.value, MAX_DOCUMENT_DEPTH);
  if (deep) return { ok: false, kind: "value", pointer: toPointer(deep), message: `it nests deeper than ${MAX_DOCUMENT_DEPTH} levels` };
  const [unstorable] = findUnstorable(parsed.value, 1);
  if (unstorable) return { ok: false, kind: "value", pointer: unstorable.path, message: unstorable.message };
  return parsed;
}

/** Whether a JSON number token's value survives a round trip through a double. */
export function isFaithfulNumber(token: string): boolean {
  const n = Number(token);
  if (!Number.isFinite(n)) return false;
  const meant = decimalValue(token);
  const shown = decimalValue(String(n));
  return meant !== undefined && shown !== undefined && meant.digits === shown.digits && meant.exponent === shown.exponent && meant.negative === shown.negative;
}

const NUMBER_TOKEN = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A decimal as sign, significant digits and power of ten, so equal values compare equal. Zero has no sign. */
function decimalValue(token: string): { negative: boolean; digits: string; exponent: number } | undefined {
  const m = NUMBER_TOKEN.exec(token);
  if (!m) return undefined;
  const fraction = m[3] ?? "";
  let digits = (m[2]! + fraction).replace(/^0+/, "");
  if (digits === "") return { negative: false, digits: "0", exponent: 0 };
  let exponent = Number(m[4] ?? "0") - fraction.length;
  const trailing = /0+$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  return { negative: m[1] === "-", digits, exponent };
}

type Frame = { kind: "object"; key: string | undefined; expectKey: boolean } | { kind: "array"; index: number };

/**
 * The first number token in (already valid) JSON text that is not faithful, with its JSON
 * Pointer. A single pass with an explicit stack: deep nesting costs no recursion.
 */
export function findUnfaithfulNumber(text: string): { pointer: string; token: string } | undefined {
  const stack: Frame[] = [];
  const path = (): (string | number)[] => stack.map((f) => (f.kind === "array" ? f.index : (f.key ?? "")));
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      const top = stack.at(-1);
      if (top?.kind === "object" && top.expectKey) {
        top.key = JSON.parse(text.slice(i, end)) as string;
        top.expectKey = false;
      }
      i = end;
    } else if (c === "{") {
      stack.push({ kind: "object", key: undefined, expectKey: true });
      i++;
    } else if (c === "[") {
      stack.push({ kind: "array", index: 0 });
      i++;
    } else if (c === "}" || c === "]") {
      stack.pop();
      i++;
    } else if (c === ",") {
      const top = stack.at(-1);
      if (top?.kind === "array") top.index++;
      else if (top) top.expectKey = true;
      i++;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      let end = i + 1;
      while (end < text.length && /[0-9eE.+-]/.test(text[end]!)) end++;
      const token = text.slice(i, end);
      if (!isFaithfulNumber(token)) return { pointer: toPointer(path()), token };
      i = end;
    } else i++;
  }
  return undefined;
}

/** Index just past the closing quote of the string starting at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\") i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return i;
}

function abbreviate(token: string): string {
  return token.length > 40 ? `${token.slice(0, 37)}…` : token;
}
