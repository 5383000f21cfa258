import { describe, expect, it } from "vitest";
import { wrapPieces } from "../../../src/web/wrap-points.tsx";

describe("wrapPieces: where a long value may wrap", () => {
  it.each<[string, string[]]>([
    ["very.long.name@sub.example", ["very.", "long.", "name@", "sub.", "example"]],
    ["https://files.example.com/a-b", ["https:", "/", "/", "files.", "example.", "com/", "a-", "b"]],
    ["?x=1&y=2", ["?", "x=", "1&", "y=", "2"]],
    ["no separators", ["no separators"]],
    ["ends with a dot.", ["ends with a dot."]],
    ["a. b", ["a. b"]],
    ["", [""]],
  ])("%s", (text, pieces) => {
    expect(wrapPieces(text)).toEqual(pieces);
    expect(wrapPieces(text).join("")).toBe(text);
  });
});
