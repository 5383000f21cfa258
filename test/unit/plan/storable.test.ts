import { describe, expect, it } from "vitest";
import { findUnstorable, isStorableText, whyUnstorableText } from "../../../src/plan/storable.ts";

describe("whyUnstorableText", () => {
  it.each(["", "plain", "😀 emoji pair", "שָׁלוֹם", "\uFFFD", "tab\tnewline\n"])("accepts %j", (text) => {
    expect(whyUnstorableText(text)).toBeUndefined();
    expect(isStorableText(text)).toBe(true);
  });

  it.each<[string, RegExp]>([
    ["a\u0000b", /NUL/],
    ["\uD800", /lone UTF-16 surrogate \(U\+D800\) at character 0/],
    ["ab\uDC00", /U\+DC00\) at character 2/],
    ["\uDE00\uD83D", /lone UTF-16 surrogate/],
    ["x\uD83D", /lone/],
  ])("refuses %j", (text, why) => {
    expect(whyUnstorableText(text)).toMatch(why);
    expect(isStorableText(text)).toBe(false);
  });
});

describe("findUnstorable", () => {
  it("finds nothing in ordinary JSON", () => {
    expect(findUnstorable({ a: [1, "x", { b: null, c: true }], "😀": "ok" })).toEqual([]);
  });

  it("names the JSON Pointer of every bad string, in document order", () => {
    const issues = findUnstorable({ title: "ok", actions: [{ body: { name: "a\uD800" } }, { body: { "x/y": ["ok", "nul\u0000"] } }] });
    expect(issues.map((i) => i.path)).toEqual(["/actions/0/body/name", "/actions/1/body/x~1y/1"]);
    expect(issues[0]!.message).toMatch(/surrogate/);
    expect(issues[1]!.message).toMatch(/NUL/);
  });

  it("names the object holding a bad key", () => {
    const issues = findUnstorable({ body: { ["k\uDFFF"]: 1 } });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toBe("/body");
    expect(issues[0]!.message).toMatch(/field name/);
  });

  it("the whole value can be the bad string", () => {
    expect(findUnstorable("\u0000")).toEqual([{ path: "", message: expect.stringMatching(/NUL/) }]);
  });

  it("stops at max issues", () => {
    expect(
      findUnstorable(
        Array.from({ length: 100 }, () => "\u0000"),
        3,
      ),
    ).toHaveLength(3);
  });

  it("walks deep nesting without recursion", () => {
    let deep: unknown = "\uD800";
    for (let i = 0; i < 50_000; i++) deep = [deep];
    expect(findUnstorable(deep)[0]!.path.split("/")).toHaveLength(50_001);
  });
});
