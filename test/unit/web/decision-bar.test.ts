import { describe, expect, it } from "vitest";
import { changeCount } from "../../../src/web/decision-bar.tsx";

const action = (fields: number) => ({ changes: Array.from({ length: fields }, (_, i) => ({ path: `/f${i}`, from: null, to: i })) });

describe("the decision bar's count of what Approve decides", () => {
  it("counts field changes, and names the actions when there are several", () => {
    expect(changeCount([action(1)])).toBe("1 change");
    expect(changeCount([action(2)])).toBe("2 changes");
    expect(changeCount([action(40)])).toBe("40 changes");
    expect(changeCount([action(2), action(1)])).toBe("3 changes in 2 actions");
    expect(changeCount([action(0)])).toBe("0 changes");
  });
});
