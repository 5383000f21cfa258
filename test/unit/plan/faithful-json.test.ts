import { describe, expect, it } from "vitest";
import { findUnfaithfulNumber, isFaithfulNumber, MAX_DOCUMENT_DEPTH, parseFaithfulJson, parseHashableJson } from "../../../src/plan/faithful-json.ts";

describe("isFaithfulNumber", () => {
  it.each([
    "0",
    "-0",
    "1",
    "1.0",
    "1e2",
    "1E+2",
    "100",
    "0.1",
    "0.10",
    "-12.5",
    "1.7976931348623157e308",
    "5e-324",
    "9007199254740993e-16",
    "123456789e10",
    "0.000001",
    "1e21",
    "2.5e-7",
  ])("accepts %s (same value as the double shows)", (token) => expect(isFaithfulNumber(token)).toBe(true));

  it.each([
    "12345678901234567890",
    "1.00000000000000000001",
    "1e400",
    "-1e400",
    "1e-400",
    "9007199254740993",
    "0.1000000000000000000001",
    "1.7976931348623159e308",
    "123456789012345678e2",
  ])("refuses %s (a double would show another value)", (token) => expect(isFaithfulNumber(token)).toBe(false));
});

describe("findUnfaithfulNumber", () => {
  it("names the JSON Pointer of the first unfaithful number", () => {
    const text = '{"actions":[{"body":{"a":1,"name":12345678901234567890}}]}';
    expect(findUnfaithfulNumber(text)).toEqual({ pointer: "/actions/0/body/name", token: "12345678901234567890" });
  });

  it("counts array positions and escapes pointer segments", () => {
    const text = '[1, 2.0, {"a/b~c": [0, 0, 1e400]}]';
    expect(findUnfaithfulNumber(text)).toEqual({ pointer: "/2/a~1b~0c/2", token: "1e400" });
  });

  it("is not fooled by numbers, braces or quotes inside strings", () => {
    expect(findUnfaithfulNumber('{"x":"12345678901234567890 } ] \\" , {","y":[1]}')).toBeUndefined();
    expect(findUnfaithfulNumber('{"x":"\\"","y":1e999}')).toEqual({ pointer: "/y", token: "1e999" });
  });

  it("tracks keys after nested values", () => {
    const text = '{"a":{"b":[1,{"c":2}]},"d":[[],[1,1.00000000000000000001]]}';
    expect(findUnfaithfulNumber(text)).toEqual({ pointer: "/d/1/1", token: "1.00000000000000000001" });
  });

  it("a top-level number has the empty pointer", () => {
    expect(findUnfaithfulNumber("  1e400 ")).toEqual({ pointer: "", token: "1e400" });
  });

  it("walks deep nesting without recursion", () => {
    const depth = 100_000;
    const text = "[".repeat(depth) + "1e400" + "]".repeat(depth);
    expect(findUnfaithfulNumber(text)?.token).toBe("1e400");
  });
});

describe("parseFaithfulJson", () => {
  it("parses faithful JSON", () => {
    expect(parseFaithfulJson('{"a":[1.0,"x"]}')).toEqual({ ok: true, value: { a: [1, "x"] } });
  });

  it("reports syntax errors as such", () => {
    const parsed = parseFaithfulJson("{nope");
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.kind).toBe("syntax");
  });

  it("refuses an unfaithful number with its pointer and what it would have shown", () => {
    const parsed = parseFaithfulJson('{"amount": 12345678901234567890}');
    expect(parsed).toMatchObject({ ok: false, kind: "number", pointer: "/amount", token: "12345678901234567890" });
    expect(!parsed.ok && parsed.message).toContain("12345678901234567000");
  });
});

describe("parseHashableJson", () => {
  it("parses a document that can be hashed and stored", () => {
    expect(parseHashableJson('{"name":"Ana","n":[1.0,2]}')).toEqual({ ok: true, value: { name: "Ana", n: [1, 2] } });
  });

  it.each<[string, string, RegExp]>([
    ['{"n": 1e400}', "/n", /cannot be held exactly/],
    ['{"a": ["\\ud800"]}', "/a/0", /lone UTF-16 surrogate/],
    ['{"a": "x\\u0000"}', "/a", /NUL/],
    ["[".repeat(MAX_DOCUMENT_DEPTH + 1) + "]".repeat(MAX_DOCUMENT_DEPTH + 1), "/0".repeat(MAX_DOCUMENT_DEPTH), /deeper than 256 levels/],
  ])("refuses %s at its pointer", (text, pointer, why) => {
    expect(parseHashableJson(text)).toEqual({ ok: false, kind: "value", pointer, message: expect.stringMatching(why) });
  });

  it("a document deep enough to overflow hashing is refused quickly, not thrown", () => {
    const depth = 200_000;
    const parsed = parseHashableJson("[".repeat(depth) + "]".repeat(depth));
    expect(parsed.ok).toBe(false);
  });

  it("reports syntax errors as such", () => {
    expect(parseHashableJson("{")).toMatchObject({ ok: false, kind: "syntax" });
  });
});
