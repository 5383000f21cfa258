import { describe, expect, it } from "vitest";
import { requestersOf } from "../../../src/plan/requesters.ts";

describe("requestersOf", () => {
  it("names the person acted for, the editor and the undo's asker, each once", () => {
    expect(requestersOf({})).toEqual([]);
    expect(requestersOf({ onBehalfOf: "U0RITA" })).toEqual(["U0RITA"]);
    expect(requestersOf({ onBehalfOf: "U0RITA", editedBy: { userId: "U0ED", via: "slack" }, askedBy: { userId: "U0ASK", via: "web" } })).toEqual([
      "U0RITA",
      "U0ED",
      "U0ASK",
    ]);
    expect(requestersOf({ onBehalfOf: "U0RITA", editedBy: { userId: "U0RITA", via: "web" } })).toEqual(["U0RITA"]);
  });
});
