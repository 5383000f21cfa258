import { describe, expect, it } from "vitest";
import { listChanges, type Change } from "../../../src/plan/changes.ts";
import type { Json } from "../../../src/plan/json.ts";

/** Order-insensitive comparison: the review cares about the set of changes. */
const byPath = (changes: Change[]): Change[] => [...changes].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

describe("listChanges", () => {
  it.each<[string, Json | undefined, Json | undefined, Change[]]>([
    // No change
    ["equal objects", { a: 1, b: { c: [1, 2] } }, { a: 1, b: { c: [1, 2] } }, []],
    ["equal objects, different key order", { a: 1, b: 2 }, { b: 2, a: 1 }, []],
    ["equal scalars", "x", "x", []],
    ["both null", null, null, []],
    ["both absent", undefined, undefined, []],
    ["empty objects", {}, {}, []],
    ["empty arrays", [], [], []],

    // Fields
    ["field changed", { name: "Ada", age: 36 }, { name: "Ada", age: 37 }, [{ path: "/age", from: 36, to: 37 }]],
    ["field type changed", { a: 1 }, { a: "1" }, [{ path: "/a", from: 1, to: "1" }]],
    ["field added", { a: 1 }, { a: 1, b: true }, [{ path: "/b", to: true }]],
    ["field removed", { a: 1, b: true }, { a: 1 }, [{ path: "/b", from: true }]],
    ["field set to null is a change, not a removal", { a: 1 }, { a: null }, [{ path: "/a", from: 1, to: null }]],
    ["field added with null keeps `to: null`", {}, { a: null }, [{ path: "/a", to: null }]],
    ["field removed that was null keeps `from: null`", { a: null }, {}, [{ path: "/a", from: null }]],

    // Nested, with JSON Pointer escaping
    ["nested field changed", { a: { b: { c: 1 } } }, { a: { b: { c: 2 } } }, [{ path: "/a/b/c", from: 1, to: 2 }]],
    ["nested field added", { a: { b: {} } }, { a: { b: { c: 1 } } }, [{ path: "/a/b/c", to: 1 }]],
    ["nested object replaced by scalar", { a: { b: 1 } }, { a: 5 }, [{ path: "/a", from: { b: 1 }, to: 5 }]],
    ["nested object replaced by array", { a: { b: 1 } }, { a: [1] }, [{ path: "/a", from: { b: 1 }, to: [1] }]],
    ["'/' in a key is escaped as ~1", { "a/b": 1 }, { "a/b": 2 }, [{ path: "/a~1b", from: 1, to: 2 }]],
    ["'~' in a key is escaped as ~0", { "m~n": 1 }, { "m~n": 2 }, [{ path: "/m~0n", from: 1, to: 2 }]],
    ["'~1' in a key escapes the '~' first", { "~1": 1 }, {}, [{ path: "/~01", from: 1 }]],
    ["nested escaped keys", { "x/y": { "p~q": { "/": 1 } } }, { "x/y": { "p~q": { "/": 2 } } }, [{ path: "/x~1y/p~0q/~1", from: 1, to: 2 }]],
    ["empty key", { "": 1 }, { "": 2 }, [{ path: "/", from: 1, to: 2 }]],
    ["key with spaces and unicode is not escaped", { "a b é": 1 }, { "a b é": 2 }, [{ path: "/a b é", from: 1, to: 2 }]],

    // Arrays
    ["array element changed", { a: [1, 2, 3] }, { a: [1, 9, 3] }, [{ path: "/a/1", from: 2, to: 9 }]],
    ["array element appended", { a: [1] }, { a: [1, 2] }, [{ path: "/a/1", to: 2 }]],
    ["array element removed from the end", { a: [1, 2] }, { a: [1] }, [{ path: "/a/1", from: 2 }]],
    ["object inside an array changed", { a: [{ id: 1, v: "x" }] }, { a: [{ id: 1, v: "y" }] }, [{ path: "/a/0/v", from: "x", to: "y" }]],
    ["root arrays", [1, 2], [1, 3], [{ path: "/1", from: 2, to: 3 }]],
    ["array replaced by object at a field", { a: [1] }, { a: { "0": 1 } }, [{ path: "/a", from: [1], to: { "0": 1 } }]],

    // Whole documents: one change at the root
    ["create (absent → object)", undefined, { id: 1, name: "Ada" }, [{ path: "", to: { id: 1, name: "Ada" } }]],
    ["create (absent → array)", undefined, [1], [{ path: "", to: [1] }]],
    ["delete (object → absent)", { id: 1, name: "Ada" }, undefined, [{ path: "", from: { id: 1, name: "Ada" } }]],
    ["null → object", null, { a: 1 }, [{ path: "", from: null, to: { a: 1 } }]],
    ["object → array at the root", { a: 1 }, [1], [{ path: "", from: { a: 1 }, to: [1] }]],
    ["scalar changed at the root", 1, 2, [{ path: "", from: 1, to: 2 }]],
  ])("%s", (_name, before, after, expected) => {
    expect(byPath(listChanges(before, after))).toStrictEqual(byPath(expected));
  });

  it("lists several changes at once, one per field", () => {
    const changes = listChanges(
      { name: "Ada", age: 36, tags: ["a", "b"], address: { city: "London", zip: "N1" }, old: true },
      { name: "Ada", age: 37, tags: ["a", "c"], address: { city: "Paris", zip: "N1" }, new: 1 },
    );
    expect(byPath(changes)).toStrictEqual(
      byPath([
        { path: "/age", from: 36, to: 37 },
        { path: "/tags/1", from: "b", to: "c" },
        { path: "/address/city", from: "London", to: "Paris" },
        { path: "/old", from: true },
        { path: "/new", to: 1 },
      ]),
    );
  });

  it("omits `from` on additions and `to` on removals (absent, not undefined)", () => {
    const [added] = listChanges({}, { a: 1 });
    const [removed] = listChanges({ a: 1 }, {});
    expect(added && Object.keys(added).sort()).toEqual(["path", "to"]);
    expect(removed && Object.keys(removed).sort()).toEqual(["from", "path"]);
    const [created] = listChanges(undefined, { a: 1 });
    const [deleted] = listChanges({ a: 1 }, undefined);
    expect(created && Object.keys(created).sort()).toEqual(["path", "to"]);
    expect(deleted && Object.keys(deleted).sort()).toEqual(["from", "path"]);
  });

  it("does not mutate its inputs", () => {
    const before: Json = { a: { b: [1, 2] }, c: 1 };
    const after: Json = { a: { b: [1] }, d: 2 };
    const b0 = structuredClone(before);
    const a0 = structuredClone(after);
    listChanges(before, after);
    expect(before).toStrictEqual(b0);
    expect(after).toStrictEqual(a0);
  });

  // Members named like Object.prototype properties ("constructor", "toString", "__proto__", …)
  // are ordinary fields: a reviewer must see an agent add `{"constructor": …}` to a record.
  it.each<[string, Json, Json, Change[]]>([
    ["added 'constructor' is listed", { a: 1 }, { a: 1, constructor: "x" }, [{ path: "/constructor", to: "x" }]],
    ["added 'toString' is listed", {}, { toString: { nested: true } }, [{ path: "/toString", to: { nested: true } }]],
    ["removed 'valueOf' is a removal, not a change to a function", { valueOf: 1 }, {}, [{ path: "/valueOf", from: 1 }]],
    [
      "added '__proto__' (as JSON.parse makes it) is listed",
      { a: 1 },
      JSON.parse('{"a":1,"__proto__":{"x":1}}') as Json,
      [{ path: "/__proto__", to: { x: 1 } }],
    ],
  ])("Object.prototype-named members: %s", (_name, before, after, expected) => {
    expect(listChanges(before, after)).toStrictEqual(expected);
  });
});
