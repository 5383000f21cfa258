import { describe, expect, it } from "vitest";
import { PARENT_PID_ENV, whenParentGone } from "../../../src/cli/parent-watch.ts";

describe("whenParentGone: start's executor child stops when start is gone", () => {
  it("watches nothing unless start named itself", () => {
    expect(whenParentGone({})).toBeUndefined();
    expect(whenParentGone({ [PARENT_PID_ENV]: "not-a-pid" })).toBeUndefined();
  });

  it("settles, naming the parent, once the process's parent is not the one named", async () => {
    // A pid that is not this process's parent stands for a start that has died.
    const notOurParent = process.ppid === 1 ? 2 : 1;
    await expect(whenParentGone({ [PARENT_PID_ENV]: String(notOurParent) }, 20)).resolves.toBe(
      `its parent 'countersign start' (pid ${notOurParent}) is gone, so it stops too`,
    );
  });
});
