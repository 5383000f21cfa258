import { isDeepStrictEqual } from "node:util";
import { parseFaithfulJson } from "./faithful-json.ts";
import { findTooDeep, isJsonObject, pointerSegment, toPointer, type Json, type JsonObject } from "./json.ts";
import { LIMITS, type ActionRequest, type PlannedAction } from "./schema.ts";
import { findUnstorable } from "./storable.ts";

/*
 * Edit before approve: a reviewer changes values, nothing else. The values are those a plan
 * already writes: the members of an http.json body (down to its leaves) and the columns a
 * postgres.row action sets. Targets, paths, keys, ops, kinds and the set of fields stay as the
 * agent sent them; a secret (masked for reviewers) is never edited and is carried over as it is.
 */

/** One value a reviewer may change, and where it sits. */
export interface ValueField {
  /** `<action index>:<JSON Pointer>`: the name a form field carries. */
  key: string;
  /** The action's index in the plan. */
  action: number;
  /** Into the http.json body ("" for a whole body that is not an object), or `/<column>` of a postgres.row action. */
  pointer: string;
  value: Json;
  /** Masked for reviewers: never edited, carried over unchanged. */
  masked: boolean;
}

/** Whether reviewers see this value masked (policy/redact.ts decides; the plan layer only asks). */
export type IsMasked = (pointer: string, value: Json) => boolean;

/** The name a form field carries for a value of an action. */
export function fieldKey(action: number, pointer: string): string {
  return `${action}:${pointer}`;
}

/**
 * Every value the plan writes, in action order and, within an action, in the order the agent
 * wrote them. An object member that is itself a non-empty object is walked into; arrays, empty
 * objects and scalars are values of their own.
 */
export function valueFields(actions: readonly PlannedAction[], isMasked: IsMasked): ValueField[] {
  const fields: ValueField[] = [];
  actions.forEach((action, index) => {
    const add = (pointer: string, value: Json) =>
      fields.push({ key: fieldKey(index, pointer), action: index, pointer, value, masked: isMasked(pointer, value) });
    if (action.kind === "http.json") {
      if (action.body !== undefined) leaves(action.body, [], add);
    } else {
      for (const [column, value] of Object.entries(action.values ?? {})) add(toPointer([column]), value);
    }
  });
  return fields;
}

function leaves(value: Json, path: (string | number)[], add: (pointer: string, value: Json) => void): void {
  if (isJsonObject(value) && Object.keys(value).length > 0 && path.length < LIMITS.maxDepth) {
    for (const [key, member] of Object.entries(value)) leaves(member, [...path, key], add);
    return;
  }
  add(toPointer(path), value);
}

/** A value's text as a reviewer edits it: JSON, with the characters that reorder or hide text escaped, so it reads back exactly. */
export function editableText(value: Json): string {
  return JSON.stringify(value).replace(HIDDEN_CHARACTERS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Bidi controls, line and paragraph separators: valid inside a JSON string, invisible or misleading in a text box. */
const HIDDEN_CHARACTERS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029]/g;

/** The most characters one edited value may have: a plan's body is bounded by the same. */
export const MAX_VALUE_CHARS = LIMITS.maxBodyBytes;

/** Typed text as a JSON value, or why it is not one a plan can hold. */
export function parseValueText(text: string): { ok: true; value: Json } | { ok: false; message: string } {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, message: 'empty: type a JSON value, such as "text", 42, true or null' };
  if (trimmed.length > MAX_VALUE_CHARS) return { ok: false, message: `longer than ${MAX_VALUE_CHARS} characters` };
  const parsed = parseFaithfulJson(trimmed);
  if (!parsed.ok) {
    if (parsed.kind === "number") return { ok: false, message: parsed.message };
    // A word typed as it reads ("ana@new.example", yes) is the usual slip: say the fix.
    if (!/^[-\d"[{]/.test(trimmed)) return { ok: false, message: `not JSON: quote strings (${JSON.stringify(trimmed.slice(0, 60))})` };
    return { ok: false, message: `not JSON (${parsed.message})` };
  }
  if (findTooDeep(parsed.value, LIMITS.maxDepth)) return { ok: false, message: `nests deeper than ${LIMITS.maxDepth} levels` };
  const unstorable = findUnstorable(parsed.value, 1)[0];
  if (unstorable) return { ok: false, message: `${unstorable.path ? `at ${unstorable.path}: ` : ""}${unstorable.message}` };
  return { ok: true, value: parsed.value };
}

/** One value a reviewer changed. */
export interface ValueEdit {
  key: string;
  from: Json;
  to: Json;
}

export type EditResult = { ok: true; actions: ActionRequest[]; edits: ValueEdit[] } | { ok: false; issues: { path: string; message: string }[] };

/**
 * The plan's actions as requests again, with the reviewer's values in place. `typed` holds text
 * by field key; a value typed as it already is changes nothing. Refused, naming each field: a
 * key that is not a value of this plan, a secret, text that is not JSON, and an edit that
 * changes nothing at all.
 */
export function editValues(actions: readonly PlannedAction[], typed: Readonly<Record<string, string>>, isMasked: IsMasked): EditResult {
  const fields = new Map(valueFields(actions, isMasked).map((f) => [f.key, f]));
  const issues: { path: string; message: string }[] = [];
  const edits: ValueEdit[] = [];
  for (const [key, text] of Object.entries(typed)) {
    const path = `/values/${pointerSegment(key)}`;
    const field = fields.get(key);
    if (!field) {
      issues.push({ path, message: "not a value this plan writes: only the fields, body members and row columns it already changes can be edited" });
      continue;
    }
    if (field.masked) {
      issues.push({ path, message: "a secret: it cannot be edited, and is carried over unchanged" });
      continue;
    }
    const parsed = parseValueText(text);
    if (!parsed.ok) {
      issues.push({ path, message: parsed.message });
      continue;
    }
    if (!isDeepStrictEqual(parsed.value, field.value)) edits.push({ key, from: field.value, to: parsed.value });
  }
  if (issues.length > 0) return { ok: false, issues };
  if (edits.length === 0) return { ok: false, issues: [{ path: "/values", message: "nothing changed: every value is as the plan has it" }] };
  const requests = actions.map(requestOf);
  for (const edit of edits) {
    const field = fields.get(edit.key)!;
    const request = requests[field.action]!;
    if (request.kind === "http.json") request.body = withValue(request.body!, field.pointer, edit.to);
    else request.values = withValue(request.values as JsonObject, field.pointer, edit.to) as Record<string, Json>;
  }
  return { ok: true, actions: requests, edits };
}

/** A planned action as the request that made it: what the preview fixed (precondition, digests) is computed again. */
function requestOf(action: PlannedAction): ActionRequest {
  if (action.kind === "http.json") {
    return { kind: "http.json", target: action.target, path: action.path, op: action.op, ...(action.body !== undefined ? { body: action.body } : {}) };
  }
  return {
    kind: "postgres.row",
    target: action.target,
    table: action.table,
    // The key as the preview fixed it: the one form the database reads back, which it takes again.
    key: action.key as Record<string, string | number>,
    op: action.op,
    ...(action.values !== undefined ? { values: action.values } : {}),
  };
}

/** A copy of `document` with the value at `pointer` (a field of it: every segment but the last exists) replaced. */
function withValue(document: Json, pointer: string, value: Json): Json {
  if (pointer === "") return value;
  const segments = pointer
    .slice(1)
    .split("/")
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  const copy = structuredClone(document) as JsonObject;
  let at = copy;
  for (const segment of segments.slice(0, -1)) at = at[segment] as JsonObject;
  // Defined, not assigned: a member named "__proto__" is a field like any other.
  Object.defineProperty(at, segments.at(-1)!, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}
