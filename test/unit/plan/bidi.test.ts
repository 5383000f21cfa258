import { describe, expect, it } from "vitest";
import { neutralizeBidi, neutralizeBidiJson } from "../../../src/plan/bidi.ts";

describe("neutralizeBidi", () => {
  it.each<[string, string, string]>([
    ["right-to-left override", "refund \u202E01$\u202C to alice", "refund ⟨U+202E⟩01$⟨U+202C⟩ to alice"],
    ["embeddings", "\u202A\u202B\u202D", "⟨U+202A⟩⟨U+202B⟩⟨U+202D⟩"],
    ["isolates", "\u2066a\u2067b\u2068c\u2069", "⟨U+2066⟩a⟨U+2067⟩b⟨U+2068⟩c⟨U+2069⟩"],
    ["implicit marks", "\u200E\u200F\u061C", "⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩"],
  ])("makes %s visible", (_name, input, expected) => {
    expect(neutralizeBidi(input)).toBe(expected);
  });

  it("leaves right-to-left scripts, emoji joiners and other text alone", () => {
    const text = "שָׁלוֹם مرحبا 👩‍💻 e\u0301 \u200B";
    expect(neutralizeBidi(text)).toBe(text);
  });
});

describe("neutralizeBidiJson", () => {
  it("neutralizes every string and key, and keeps other values", () => {
    expect(neutralizeBidiJson({ ["k\u202E"]: ["v\u2066", 1, null, true, { x: "\u200F" }] })).toEqual({
      "k⟨U+202E⟩": ["v⟨U+2066⟩", 1, null, true, { x: "⟨U+200F⟩" }],
    });
  });
});
