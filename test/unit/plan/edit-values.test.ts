import { describe, expect, it } from "vitest";
import { editableText, editValues, parseValueText, valueFields } from "../../../src/plan/edit-values.ts";
import type { PlannedAction } from "../../../src/plan/schema.ts";
import { isMaskedValue, redactionRules } from "../../../src/policy/redact.ts";

const DIGEST = `sha256:${"0".repeat(64)}`;
const masked = (pointer: string, value: Parameters<typeof isMaskedValue>[1]) => isMaskedValue(pointer, value, redactionRules());

const merge: PlannedAction = {
  kind: "http.json",
  target: "crm",
  path: "/contacts/1",
  op: "merge",
  body: { email: "ana@old.example", address: { city: "Porto", lines: ["a", "b"] }, apiToken: "tok-1", tags: {} },
  precondition: { etag: '"v1"' },
  beforeDigest: DIGEST,
  afterDigest: DIGEST,
};
const row: PlannedAction = {
  kind: "postgres.row",
  target: "crmdb",
  path: "/contacts/id=7",
  table: "contacts",
  op: "update",
  key: { id: 7 },
  values: { email: "gil@old.example", password: "hunter2", score: 3 },
  precondition: { version: "12" },
  beforeDigest: DIGEST,
  afterDigest: DIGEST,
};
const remove: PlannedAction = {
  kind: "http.json",
  target: "crm",
  path: "/contacts/9",
  op: "delete",
  precondition: { etag: '"v9"' },
  beforeDigest: DIGEST,
  afterDigest: DIGEST,
};

describe("valueFields: the values a plan writes, and only those", () => {
  it("walks an http.json body to its leaves (arrays and empty objects are values), takes a row's columns, and skips a delete", () => {
    const fields = valueFields([merge, remove, row], masked);
    expect(fields.map((f) => [f.key, f.masked])).toEqual([
      ["0:/email", false],
      ["0:/address/city", false],
      ["0:/address/lines", false],
      ["0:/apiToken", true],
      ["0:/tags", false],
      ["2:/email", false],
      ["2:/password", true],
      ["2:/score", false],
    ]);
    expect(fields[2]!.value).toEqual(["a", "b"]);
  });

  it("a body that is not an object is one value, the whole body; a credential-looking string is masked wherever it sits", () => {
    const array: PlannedAction = { ...merge, op: "replace", body: [1, 2] };
    const keyed: PlannedAction = { ...merge, body: { note: "xoxb-1234567890-abcdefghij" } };
    expect(valueFields([array, keyed], masked).map((f) => [f.key, f.masked])).toEqual([
      ["0:", false],
      ["1:/note", true],
    ]);
  });

  it("keys are JSON Pointers: '/' and '~' in a member name are escaped, and a member named __proto__ is a field like any other", () => {
    const odd: PlannedAction = { ...merge, body: JSON.parse('{"a/b": 1, "c~d": 2, "__proto__": 3}') };
    expect(valueFields([odd], masked).map((f) => f.key)).toEqual(["0:/a~1b", "0:/c~0d", "0:/__proto__"]);
    const edited = editValues([odd], { "0:/__proto__": "4", "0:/a~1b": "5" }, masked);
    expect(edited.ok && edited.actions[0]).toMatchObject({ body: { "a/b": 5, "c~d": 2 } });
    expect(edited.ok && Object.getOwnPropertyDescriptor((edited.actions[0] as { body: object }).body, "__proto__")?.value).toBe(4);
  });
});

describe("parseValueText: JSON literals only", () => {
  it.each([
    ['"ana@new.example"', "ana@new.example"],
    ["42", 42],
    ["  true ", true],
    ["null", null],
    ['{"city": "Lisbon"}', { city: "Lisbon" }],
    ['"\\u202e"', "\u202e"],
  ])("%s is a value", (text, value) => {
    expect(parseValueText(text)).toEqual({ ok: true, value });
  });

  it.each([
    ["ana@new.example", 'not JSON: quote strings ("ana@new.example")'],
    ["yes", 'not JSON: quote strings ("yes")'],
    ["", "empty: type a JSON value"],
    ["   ", "empty: type a JSON value"],
    ['{"a": }', "not JSON ("],
    ["12345678901234567890", "cannot be held exactly"],
    ['"\\u0000"', "NUL"],
    [`${"[".repeat(40)}${"]".repeat(40)}`, "nests deeper than 32 levels"],
  ])("%j is refused: %s", (text, message) => {
    const parsed = parseValueText(text);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.message).toContain(message);
  });

  it("editableText reads back exactly: controls, bidi and line separators are escaped, so nothing hides in the text box", () => {
    for (const value of ["a\u202eb", "line\u2028sep", "tab\tnew\nline", { k: "\u2066x\u2069" }, [1, "é", null]]) {
      const text = editableText(value);
      expect(text).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u2028\u2029\t\n]/);
      expect(parseValueText(text)).toEqual({ ok: true, value });
    }
  });
});

describe("editValues: a new request with the reviewer's values, nothing else", () => {
  it("replaces exactly the values typed differently, keeps the rest (secrets included) and every target, path, op and key", () => {
    const result = editValues(
      [merge, remove, row],
      { "0:/email": '"ana@new.example"', "0:/address/city": '"Porto"', "2:/score": "4", "0:/tags": "{}" },
      masked,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.edits).toEqual([
      { key: "0:/email", from: "ana@old.example", to: "ana@new.example" },
      { key: "2:/score", from: 3, to: 4 },
    ]);
    expect(result.actions).toEqual([
      {
        kind: "http.json",
        target: "crm",
        path: "/contacts/1",
        op: "merge",
        body: { email: "ana@new.example", address: { city: "Porto", lines: ["a", "b"] }, apiToken: "tok-1", tags: {} },
      },
      { kind: "http.json", target: "crm", path: "/contacts/9", op: "delete" },
      {
        kind: "postgres.row",
        target: "crmdb",
        table: "contacts",
        key: { id: 7 },
        op: "update",
        values: { email: "gil@old.example", password: "hunter2", score: 4 },
      },
    ]);
    // The plan's own actions are untouched.
    expect(merge).toMatchObject({ body: { email: "ana@old.example" } });
  });

  it("refuses, naming each field: a value the plan does not write, a secret, text that is not JSON", () => {
    const result = editValues(
      [merge, row],
      { "0:/phone": '"1"', "0:/apiToken": '"tok-2"', "1:/password": '"x"', "0:/email": "ana@new.example", "1:/id": "8" },
      masked,
    );
    expect(result).toEqual({
      ok: false,
      issues: [
        { path: "/values/0:~1phone", message: expect.stringContaining("not a value this plan writes") },
        { path: "/values/0:~1apiToken", message: expect.stringContaining("a secret") },
        { path: "/values/1:~1password", message: expect.stringContaining("a secret") },
        { path: "/values/0:~1email", message: 'not JSON: quote strings ("ana@new.example")' },
        // A key column is where the row is, not a value it writes.
        { path: "/values/1:~1id", message: expect.stringContaining("not a value this plan writes") },
      ],
    });
  });

  it("an edit that changes nothing is refused", () => {
    expect(editValues([merge], { "0:/email": ' "ana@old.example" ' }, masked)).toEqual({
      ok: false,
      issues: [{ path: "/values", message: "nothing changed: every value is as the plan has it" }],
    });
    expect(editValues([merge], {}, masked).ok).toBe(false);
  });

  it("a whole body that is not an object is replaced as one value", () => {
    const replace: PlannedAction = { ...merge, op: "replace", body: [1, 2] };
    const result = editValues([replace], { "0:": "[1, 2, 3]" }, masked);
    expect(result.ok && result.actions[0]).toMatchObject({ body: [1, 2, 3] });
  });
});
