import { describe, expect, it } from "vitest";
import { holdsChange, valueAt } from "../../../src/plan/holds-change.ts";
import type { Json } from "../../../src/plan/json.ts";
import { applyMergePatch } from "../../../src/plan/merge-patch.ts";

type Row = [name: string, current: Json | undefined, expected: boolean];

/** One plan (before → after) checked against several states the target might be in now. */
function table(before: Json | null, after: Json | null, rows: Row[]): void {
  it.each(rows)("%s", (_name, current, expected) => {
    expect(holdsChange(before, after, current)).toBe(expected);
  });
}

describe("valueAt", () => {
  const doc: Json = {
    a: { b: { c: 1 } },
    "a/b": "slash",
    "m~n": "tilde",
    "~1": "tilde-one",
    "": { "": "empty keys" },
    list: [10, { x: "y" }, [true]],
    n: null,
    toString: "own",
  };

  it.each<[string, string, Json | undefined]>([
    ["the root", "", doc],
    ["a nested field", "/a/b/c", 1],
    ["an object", "/a/b", { c: 1 }],
    ["'~1' decodes to '/'", "/a~1b", "slash"],
    ["'~0' decodes to '~'", "/m~0n", "tilde"],
    ["'~01' decodes to '~1', not '/' (~1 is decoded before ~0)", "/~01", "tilde-one"],
    ["the empty key", "/", { "": "empty keys" }],
    ["the empty key twice", "//", "empty keys"],
    ["an array element", "/list/0", 10],
    ["a field in an array element", "/list/1/x", "y"],
    ["an element of a nested array", "/list/2/0", true],
    ["null is a value, not absence", "/n", null],
    ["an own field named like an Object.prototype member", "/toString", "own"],
  ])("finds %s", (_name, pointer, expected) => {
    expect(valueAt(doc, pointer)).toStrictEqual(expected);
  });

  it.each<[string, string]>([
    ["a missing field", "/missing"],
    ["below a missing field", "/missing/deeper"],
    ["below a scalar", "/a/b/c/d"],
    ["below null", "/n/x"],
    ["an index past the end", "/list/3"],
    ["a non-numeric index", "/list/x"],
    ["'-' (past the end)", "/list/-"],
    ["'length' of an array", "/list/length"],
    ["an unescaped '/' read as nesting", "/a/b/c/../c"],
    ["an inherited member", "/constructor"],
    ["an inherited member, nested", "/a/hasOwnProperty"],
    ["'__proto__'", "/__proto__"],
  ])("is undefined for %s", (_name, pointer) => {
    expect(valueAt(doc, pointer)).toBeUndefined();
  });

  it("is undefined for anything below an absent document", () => {
    expect(valueAt(undefined, "/a")).toBeUndefined();
    expect(valueAt(undefined, "")).toBeUndefined();
  });

  // RFC 6901 accepts only "0" or digits without a leading zero as an array index; Number(key)
  // would read "" as 0 and " 1", "0x1", "1e0", "01" as 1.
  it("is undefined for array segments that are not RFC 6901 indices ('', ' 1', '0x1', '1e0', '01')", () => {
    const list: Json = ["zero", "one"];
    for (const pointer of ["/", "/ 1", "/0x1", "/1e0", "/01"]) {
      expect(valueAt(list, pointer), pointer).toBeUndefined();
    }
  });
});

describe("holdsChange", () => {
  describe("merge, applied by the target with its own fields added", () => {
    const before: Json = { id: 1, name: "Ana Lima", email: "ana@old.example", phone: "111" };
    const after = applyMergePatch(before, { email: "ana@new.example", phone: "222" });
    table(before, after, [
      ["exactly the after-state", after, true],
      ["the after-state plus target-maintained fields", { ...(after as object), updatedAt: "2026-12-02T12:00:00Z", version: 7 }, true],
      ["the change, and an unrelated field someone else changed", { ...(after as object), name: "Ana L." }, true],
      ["the change applied in part (email but not phone)", { ...(before as object), email: "ana@new.example" }, false],
      ["the before-state", before, false],
      ["the before-state plus target-maintained fields", { ...(before as object), updatedAt: "2026-12-02T12:00:00Z" }, false],
      ["a changed field holding another value", { ...(after as object), phone: "333" }, false],
      ["a changed field holding the same value with another type", { ...(after as object), phone: 222 }, false],
      ["a changed field removed", { id: 1, name: "Ana Lima", email: "ana@new.example" }, false],
      ["absent (deleted since)", undefined, false],
      ["not an object", ["ana@new.example", "222"], false],
    ]);
  });

  describe("merge that sets nested fields", () => {
    const before: Json = { id: 1, address: { city: "Lisboa", zip: "1000" }, tags: ["a"] };
    const after = applyMergePatch(before, { address: { city: "Porto" } });
    table(before, after, [
      ["the nested change, sibling kept, target adds a nested field", { id: 1, address: { city: "Porto", zip: "1000", geo: { lat: 41 } }, tags: ["a"] }, true],
      ["the nested field not changed", { id: 1, address: { city: "Lisboa", zip: "1000" }, tags: ["a"] }, false],
      ["the parent replaced by a scalar", { id: 1, address: "Porto", tags: ["a"] }, false],
    ]);
  });

  describe("merge that removes a field (null in the patch)", () => {
    const before: Json = { id: 1, name: "Ana", nickname: "Aninha" };
    const after = applyMergePatch(before, { nickname: null });
    it("the plan's after-state has no such field", () => expect(after).toStrictEqual({ id: 1, name: "Ana" }));
    table(before, after, [
      ["the field absent now", { id: 1, name: "Ana", updatedAt: "now" }, true],
      ["the field still present", { id: 1, name: "Ana", nickname: "Aninha" }, false],
      ["the field present with another value", { id: 1, name: "Ana", nickname: "Ana" }, false],
      ["the field present as null (null is not absence)", { id: 1, name: "Ana", nickname: null }, false],
    ]);
  });

  describe("a plan that sets a field to null (replace), which is not removing it", () => {
    const before: Json = { id: 1, manager: "U0BOB" };
    const after: Json = { id: 1, manager: null };
    table(before, after, [
      ["null now", { id: 1, manager: null }, true],
      ["the field absent", { id: 1 }, false],
      ["the old value", { id: 1, manager: "U0BOB" }, false],
    ]);
  });

  describe("fields named like Object.prototype members", () => {
    table({ id: 1 }, { id: 1, constructor: "x" }, [
      ["an added 'constructor' field, absent now, is not held", { id: 1 }, false],
      ["an added 'constructor' field, present now", { id: 1, constructor: "x" }, true],
    ]);
    table({ id: 1, toString: "t" }, { id: 1 }, [
      ["a removed 'toString' field, absent now, is held", { id: 1 }, true],
      ["a removed 'toString' field, still present", { id: 1, toString: "t" }, false],
    ]);
  });

  describe("delete", () => {
    const before: Json = { id: 1, name: "Ana" };
    table(before, null, [
      ["absent now", undefined, true],
      ["still present", before, false],
      ["present with other content", { id: 1, name: "Someone else" }, false],
      ["present and empty", {}, false],
      ["present as JSON null", null, false],
    ]);
  });

  describe("create (absent → document)", () => {
    const body: Json = { name: "Carla Dias", email: "carla@example.com", tags: ["vip"] };
    table(null, body, [
      ["exactly the body", body, true],
      ["the body plus the target's own id and createdAt", { id: 42, createdAt: "2026-12-02T12:00:00Z", ...(body as object) }, true],
      ["a field of the body missing", { id: 42, name: "Carla Dias", tags: ["vip"] }, false],
      ["a field of the body with another value", { id: 42, ...(body as object), email: "other@example.com" }, false],
      ["an array field with an extra element", { id: 42, ...(body as object), tags: ["vip", "new"] }, false],
      ["absent", undefined, false],
      ["an array instead of an object", [body], false],
    ]);
  });

  describe("create of an array document", () => {
    table(
      null,
      [1, 2],
      [
        ["the same array", [1, 2], true],
        ["a shorter array", [1], false],
        ["a longer array", [1, 2, 3], false],
        ["absent", undefined, false],
      ],
    );
  });

  describe("replace", () => {
    const before: Json = { id: 1, name: "Ana Lima", email: "ana@old.example", legacy: true };
    const after: Json = { id: 1, name: "Ana Lima", email: "ana@new.example" };
    table(before, after, [
      ["exactly the body", after, true],
      ["the body plus a target-maintained field the before-state did not have", { ...after, updatedAt: "now" }, true],
      ["a field the replace drops is still there", { ...after, legacy: true }, false],
      ["the before-state", before, false],
      ["the changed field not changed", { id: 1, name: "Ana Lima", email: "ana@old.example" }, false],
      ["absent", undefined, false],
    ]);
  });

  describe("nested pointer paths with ~0 and ~1 escapes", () => {
    const before: Json = { "a/b": { "m~n": 1, "~1": "x" } };
    const after: Json = { "a/b": { "m~n": 2, "~1": "y" } };
    table(before, after, [
      ["the keys hold the new values", { "a/b": { "m~n": 2, "~1": "y" }, extra: 1 }, true],
      ["one escaped key still old", { "a/b": { "m~n": 2, "~1": "x" } }, false],
      ["the values at the unescaped (nested) paths instead", { a: { b: { "m~n": 2, "/": "y" } }, "a/b": { "m~n": 1, "~1": "x" } }, false],
      ["'m~n' written as 'm/n' (wrong unescape)", { "a/b": { "m/n": 2, "~1": "y" } }, false],
    ]);
  });

  describe("arrays", () => {
    describe("an element appended", () => {
      table({ tags: ["a", "b"] }, { tags: ["a", "b", "c"] }, [
        ["appended", { tags: ["a", "b", "c"] }, true],
        ["not appended", { tags: ["a", "b"] }, false],
        ["another element appended", { tags: ["a", "b", "d"] }, false],
      ]);
    });
    describe("an array shortened", () => {
      table({ tags: ["a", "b", "c"] }, { tags: ["a"] }, [
        ["shortened", { tags: ["a"] }, true],
        ["still long", { tags: ["a", "b", "c"] }, false],
        ["shortened by one only", { tags: ["a", "b"] }, false],
      ]);
    });
    describe("an element inside changed", () => {
      table(
        {
          items: [
            { sku: "x", qty: 1 },
            { sku: "y", qty: 1 },
          ],
        },
        {
          items: [
            { sku: "x", qty: 1 },
            { sku: "y", qty: 5 },
          ],
        },
        [
          [
            "changed, with a target field added to the element",
            {
              items: [
                { sku: "x", qty: 1 },
                { sku: "y", qty: 5, lineId: 9 },
              ],
            },
            true,
          ],
          [
            "not changed",
            {
              items: [
                { sku: "x", qty: 1 },
                { sku: "y", qty: 1 },
              ],
            },
            false,
          ],
          [
            "elements reordered",
            {
              items: [
                { sku: "y", qty: 5 },
                { sku: "x", qty: 1 },
              ],
            },
            false,
          ],
        ],
      );
    });
  });

  describe("a no-op plan (before equals after)", () => {
    const doc: Json = { id: 1, name: "Ana" };
    table(doc, { id: 1, name: "Ana" }, [
      ["current equals it", { id: 1, name: "Ana" }, true],
      ["absent", undefined, false],
    ]);
  });

  // An object key that Number() would read as an index must not make an array look as if it
  // held the change: the executor would skip a write the target never got.
  it("a change to object key '0x1' is not held by an array that has the value at index 1", () => {
    expect(holdsChange({ m: { "0x1": "old" } }, { m: { "0x1": "new" } }, { m: ["x", "new"] })).toBe(false);
  });
});
