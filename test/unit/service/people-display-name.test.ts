import { describe, expect, it } from "vitest";
import { cleanDisplayName, isSlackUserId, MAX_DISPLAY_NAME_CHARS } from "../../../src/service/people/display-name.ts";

describe("a Slack display name as pages show it", () => {
  it("keeps a plain name as it is", () => {
    expect(cleanDisplayName("Ana Lima")).toBe("Ana Lima");
  });

  it("makes bidi controls visible, as in plan text, and folds control characters and runs of space", () => {
    expect(cleanDisplayName("Ana\u202E evil")).toBe("Ana⟨U+202E⟩ evil");
    expect(cleanDisplayName("  Ana\n\t\u0000 Lima  ")).toBe("Ana Lima");
  });

  it("is no name when nothing is left, and is cut to Slack's length by characters, not UTF-16 units", () => {
    expect(cleanDisplayName(undefined)).toBeUndefined();
    expect(cleanDisplayName(" \n ")).toBeUndefined();
    const long = cleanDisplayName("😀".repeat(100))!;
    expect([...long]).toHaveLength(MAX_DISPLAY_NAME_CHARS);
    expect(long).toBe("😀".repeat(MAX_DISPLAY_NAME_CHARS));
  });

  it("only user ids are named: not user groups, not free text", () => {
    expect(["U0ALICE", "W012ABC"].map(isSlackUserId)).toEqual([true, true]);
    expect(["S0GROUP", "alice", "U", "u0alice", "U0 ALICE", `U${"A".repeat(30)}`].map(isSlackUserId)).toEqual([false, false, false, false, false, false]);
  });
});
