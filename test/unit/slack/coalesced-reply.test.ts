import { describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/plan/outcome.ts";
import type { ActionPreview } from "../../../src/contract/agent-api.ts";
import { renderCoalescedReply } from "../../../src/slack/coalesced-reply.ts";

const action: ActionPreview = {
  target: "crm",
  path: "/contacts/42",
  op: "merge",
  before: { name: "Ada" },
  after: { name: "Ada L." },
  version: 'W/"41"',
  changes: [{ path: "/name", from: "Ada", to: "Ada L." }],
};
const applied = (a: Outcome["actions"][number]): Outcome => ({ status: "applied", actions: [a] });

describe("renderCoalescedReply: a write that did not land is in the notification line", () => {
  it("executing → applied, not as approved; the applied reply's drift detail follows its line", () => {
    const reply = renderCoalescedReply([
      { type: "plan.executing" },
      {
        type: "plan.applied",
        outcome: applied({
          index: 0,
          target: "crm",
          path: "/contacts/42",
          status: "applied",
          verified: false,
          driftAfterApply: [{ path: "/name", expected: "Ada L.", actual: "ADA L." }],
        }),
        actions: [action],
      },
    ]);
    expect(reply.text).toBe("executing → applied, not as approved");
    const texts = reply.blocks.map((b) => JSON.stringify(b));
    const line = texts.findIndex((t) => t.includes("Applied ⚠️"));
    expect(line).toBeGreaterThan(0);
    expect(texts[line + 1]).toContain("re-read after the write (approved → target has)");
  });

  it("a verified apply keeps the plain step", () => {
    const reply = renderCoalescedReply([
      { type: "plan.executing" },
      { type: "plan.applied", outcome: applied({ index: 0, target: "crm", path: "/contacts/42", status: "applied", verified: true }), actions: [action] },
    ]);
    expect(reply.text).toBe("executing → applied");
  });
});
