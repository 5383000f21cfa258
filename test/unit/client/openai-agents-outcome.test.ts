import { describe, expect, it } from "vitest";
import type { FinalOutcome } from "../../../src/client/index.ts";
import { outcomeResult } from "../../../src/client/openai-agents.ts";

type Actions = NonNullable<FinalOutcome["outcome"]>["actions"];

function applied(actions: Actions): FinalOutcome {
  return { id: "p1", hash: "sha256:x", status: "applied", approvals: [], outcome: { status: "applied", actions }, plan: {} as FinalOutcome["plan"] };
}

describe("outcomeResult tells the model when a write did not land as approved (verify after apply)", () => {
  it("every write verified (or not re-checked) → plain applied", () => {
    expect(
      outcomeResult(
        applied([
          { index: 0, target: "crm", path: "/c/1", status: "applied", verified: true },
          { index: 1, target: "crm", path: "/c/2", status: "applied", verified: null, detail: "could not re-read after the write" },
        ]),
      ),
    ).toBe("applied");
  });

  it("a dropped and a rewritten field → each named with what the target has and what was approved", () => {
    const result = outcomeResult(
      applied([
        {
          index: 0,
          target: "crm",
          path: "/c/1",
          status: "applied",
          verified: false,
          driftAfterApply: [
            { path: "/nickname", expected: "Aninha" },
            { path: "/email", expected: "b@x", actual: "B@X" },
          ],
        },
        { index: 1, target: "crm", path: "/c/2", status: "applied", verified: true },
      ]),
    );
    expect(result).toBe(
      'applied, not as approved: /c/1/nickname is absent (approved "Aninha"); /c/1/email is "B@X" (approved "b@x"); read the target again before relying on it',
    );
  });

  it("many fields → the first five and a count, long values cut", () => {
    const drift = Array.from({ length: 7 }, (_, i) => ({ path: `/f${i}`, expected: "x".repeat(200) }));
    const result = outcomeResult(applied([{ index: 0, target: "crm", path: "/c", status: "applied", verified: false, driftAfterApply: drift }]));
    expect(result).toMatch(
      /^applied, not as approved: \/c\/f0 is absent \(approved "x{78}…\); .*\/c\/f4 .*; and 2 more; read the target again before relying on it$/,
    );
  });
});
