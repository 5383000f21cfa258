import { describe, expect, it } from "vitest";
import { ageText } from "../../../src/web/lanes-page.tsx";

describe("ageText: how long a lane's oldest event has waited, read at a glance", () => {
  it.each([
    [0, "0 s"],
    [59, "59 s"],
    [60, "1 min 0 s"],
    [3599, "59 min 59 s"],
    [3600, "1 h 0 min"],
    [86_399, "23 h 59 min"],
    [86_400, "1 d 0 h"],
    [200_000, "2 d 7 h"],
  ])("%i s → %s", (seconds, text) => {
    expect(ageText(seconds)).toBe(text);
  });
});
