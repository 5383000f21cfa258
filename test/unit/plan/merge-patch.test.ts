import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/plan/json.ts";
import { applyMergePatch } from "../../../src/plan/merge-patch.ts";

/** RFC 7396 Appendix A, every row: original, patch, result. */
const RFC_7396_APPENDIX_A: [original: string, patch: string, result: string][] = [
  ['{"a":"b"}', '{"a":"c"}', '{"a":"c"}'],
  ['{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'],
  ['{"a":"b"}', '{"a":null}', "{}"],
  ['{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'],
  ['{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'],
  ['{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'],
  ['{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'],
  ['{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'],
  ['["a","b"]', '["c","d"]', '["c","d"]'],
  ['{"a":"b"}', '["c"]', '["c"]'],
  ['{"a":"foo"}', "null", "null"],
  ['{"a":"foo"}', '"bar"', '"bar"'],
  ['{"e":null}', '{"a":1}', '{"e":null,"a":1}'],
  ["[1,2]", '{"a":"b","c":null}', '{"a":"b"}'],
  ["{}", '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'],
];

const parse = (text: string): Json => JSON.parse(text) as Json;

describe("applyMergePatch", () => {
  it.each(RFC_7396_APPENDIX_A)("RFC 7396 A: %s + %s = %s", (original, patch, result) => {
    expect(applyMergePatch(parse(original), parse(patch))).toStrictEqual(parse(result));
  });

  it.each<[string, string, string, string]>([
    ["patch onto a scalar target starts from {}", '"x"', '{"a":1}', '{"a":1}'],
    ["patch onto null starts from {}", "null", '{"a":{"b":null}}', '{"a":{}}'],
    ["empty patch leaves the target as it is", '{"a":1,"b":[1]}', "{}", '{"a":1,"b":[1]}'],
    ["removing a member that is absent is a no-op", '{"a":1}', '{"zz":null}', '{"a":1}'],
    ["null in the target is kept unless patched", '{"a":null,"b":1}', '{"b":2}', '{"a":null,"b":2}'],
    ["deep merge keeps siblings at every level", '{"a":{"b":{"c":1,"d":2},"e":3}}', '{"a":{"b":{"c":9}}}', '{"a":{"b":{"c":9,"d":2},"e":3}}'],
    ["an object replaces a scalar member", '{"a":1}', '{"a":{"b":2}}', '{"a":{"b":2}}'],
    ["arrays inside a patch are taken whole (nulls in them kept)", '{"a":[1,2,3]}', '{"a":[null]}', '{"a":[null]}'],
    ['patch values false, 0 and "" are set, not deleted', '{"a":1,"b":1,"c":1}', '{"a":false,"b":0,"c":""}', '{"a":false,"b":0,"c":""}'],
  ])("%s", (_name, target, patch, result) => {
    expect(applyMergePatch(parse(target), parse(patch))).toStrictEqual(parse(result));
  });

  it("does not mutate its inputs", () => {
    const target = parse('{"a":{"b":"c","keep":[1,{"x":1}]},"gone":1,"arr":[1,2]}');
    const patch = parse('{"a":{"b":"d","new":{"n":1}},"gone":null,"arr":{"k":1},"added":[{"z":1}]}');
    const targetBefore = structuredClone(target);
    const patchBefore = structuredClone(patch);

    const result = applyMergePatch(target, patch);

    expect(target).toStrictEqual(targetBefore);
    expect(patch).toStrictEqual(patchBefore);
    expect(result).toStrictEqual(parse('{"a":{"b":"d","keep":[1,{"x":1}],"new":{"n":1}},"arr":{"k":1},"added":[{"z":1}]}'));
    // The result is a new object at every level it merged into.
    expect(result).not.toBe(target);
    expect((result as { a: Json }).a).not.toBe((target as { a: Json }).a);
  });

  it("does not mutate a frozen target or patch", () => {
    const deepFreeze = <T>(v: T): T => {
      if (typeof v === "object" && v !== null) {
        for (const child of Object.values(v)) deepFreeze(child);
        Object.freeze(v);
      }
      return v;
    };
    const target = deepFreeze(parse('{"a":{"b":1,"c":2},"d":3}'));
    const patch = deepFreeze(parse('{"a":{"b":null,"e":4},"d":null}'));
    expect(applyMergePatch(target, patch)).toStrictEqual(parse('{"a":{"c":2,"e":4}}'));
  });

  // Assigning result["__proto__"] would set the prototype instead of creating a member; the
  // after-state and its digest must match what an RFC 7396 target computes from the same patch.
  it('keeps a member named "__proto__" as data (RFC 7396 treats it like any other key)', () => {
    const result = applyMergePatch({}, parse('{"__proto__":{"x":1}}'));
    expect(Object.keys(result as object)).toEqual(["__proto__"]);
    expect(JSON.stringify(result)).toBe('{"__proto__":{"x":1}}');
  });
});
