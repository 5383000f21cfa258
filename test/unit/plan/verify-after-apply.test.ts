import { describe, expect, it } from "vitest";
import { afterApplyMismatches, holdsChange, MAX_MISMATCHES, type AfterApplyMismatch } from "../../../src/plan/holds-change.ts";
import type { Json } from "../../../src/plan/json.ts";

type Row = [name: string, current: Json | undefined, mismatches: AfterApplyMismatch[]];

/** One plan (before → after) compared with states the target might be in after the write. */
function table(before: Json | null, after: Json | null, rows: Row[]): void {
  it.each(rows)("%s", (_name, current, mismatches) => {
    expect(afterApplyMismatches(before, after, current)).toStrictEqual(mismatches);
    // The executor's "already held" check is the same rule: no mismatch.
    expect(holdsChange(before, after, current)).toBe(mismatches.length === 0);
  });
}

describe("afterApplyMismatches: merge that changes one field and removes another", () => {
  const before = { id: 7, email: "a@old.example", phone: "555", tags: ["x"] };
  const after = { id: 7, email: "b@new.example", tags: ["x"] };
  table(before, after, [
    ["exactly the after-state", after, []],
    ["the after-state plus fields of the target's own (not drift)", { ...after, updatedAt: "2026-12-03T10:00:00Z" }, []],
    ["a field the plan does not change moved (not drift: not the plan's)", { ...after, id: 8, tags: ["y"] }, []],
    ["the target silently dropped the new email", { id: 7, tags: ["x"] }, [{ path: "/email", expected: "b@new.example" }]],
    [
      "the target normalized the email",
      { id: 7, email: "B@NEW.EXAMPLE", tags: ["x"] },
      [{ path: "/email", expected: "b@new.example", actual: "B@NEW.EXAMPLE" }],
    ],
    ["the removed field is still there", { ...after, phone: "555" }, [{ path: "/phone", actual: "555" }]],
    [
      "both at once, in the plan's order",
      { id: 7, phone: "555" },
      [
        { path: "/email", expected: "b@new.example" },
        { path: "/phone", actual: "555" },
      ],
    ],
    ["a null where a string was planned", { id: 7, email: null }, [{ path: "/email", expected: "b@new.example", actual: null }]],
    ["the resource is gone", undefined, [{ path: "", expected: after }]],
  ]);
});

describe("afterApplyMismatches: create", () => {
  const after = { name: "Ana", roles: ["admin"], "a/b": 1, constructor: "own field" };
  table(null, after, [
    ["created as planned, with an id of the target's own", { ...after, id: 1 }, []],
    [
      "a field missing, one changed, named by escaped pointers",
      { name: "Ana", roles: ["viewer"], constructor: "own field" },
      [
        { path: "/roles", expected: ["admin"], actual: ["viewer"] },
        { path: "/a~1b", expected: 1 },
      ],
    ],
    // An inherited member (Object.prototype.constructor) is not a field the target returned.
    [
      "a field named like an Object.prototype member is missing",
      { name: "Ana", roles: ["admin"], "a/b": 1 },
      [{ path: "/constructor", expected: "own field" }],
    ],
    ["not created", undefined, [{ path: "", expected: after }]],
  ]);
});

describe("afterApplyMismatches: delete and arrays", () => {
  table({ id: 1 }, null, [
    ["deleted", undefined, []],
    ["still there", { id: 1 }, [{ path: "", actual: { id: 1 } }]],
  ]);
  table({ list: [1, 2] }, { list: [1, 2, 3] }, [
    ["appended", { list: [1, 2, 3] }, []],
    ["the element was not appended", { list: [1, 2] }, [{ path: "/list/2", expected: 3 }]],
  ]);
  table(
    ["a"],
    ["b"],
    [
      ["a top-level array replaced", ["b"], []],
      ["left as it was", ["a"], [{ path: "/0", expected: "b", actual: "a" }]],
    ],
  );
});

describe("afterApplyMismatches is bounded like changedSincePreview", () => {
  it(`reports at most ${MAX_MISMATCHES} fields`, () => {
    const after = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`f${i}`, i]));
    const mismatches = afterApplyMismatches({}, after, {});
    expect(mismatches).toHaveLength(MAX_MISMATCHES);
    expect(mismatches[0]).toStrictEqual({ path: "/f0", expected: 0 });
  });
});
