import { describe, expect, it } from "vitest";
import type { PlanMessage } from "../../../src/slack/plan-message.ts";
import { renderPlanMessage } from "../../../src/slack/render.ts";

const PLAN_ID = "7b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e11";
function plan(overrides: Partial<PlanMessage> = {}): PlanMessage {
  return {
    planId: PLAN_ID,
    hash: `sha256:${"0123456789abcdef".repeat(4)}`,
    status: "pending",
    environment: "production",
    title: "Update Ana's email",
    agent: "crm-bot",
    expiresAt: "2026-05-01T12:00:00Z",
    reviewUrl: `https://countersign.example/plans/${PLAN_ID}`,
    actions: [{ target: "crm", path: "/contacts/1", op: "merge", before: { email: "a@old.example" }, after: { email: "a@new.example" }, version: '"1"', changes: [{ path: "/email", from: "a@old.example", to: "a@new.example" }] }],
    policy: { approvers: ["UALICE01", "UBOB0002"], requiredApprovals: 1 },
    approvals: [],
    ...overrides,
  };
}
const text = (m: PlanMessage) => JSON.stringify(renderPlanMessage(m).blocks);
const buttonIds = (m: PlanMessage) =>
  renderPlanMessage(m).blocks.filter((b) => b.type === "actions").flatMap((b) => (b.elements as { action_id: string }[]).map((e) => e.action_id));

describe("drift on the Slack message (issue 15)", () => {
  const stale = plan({
    status: "stale",
    outcome: {
      status: "stale",
      actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "stale", expected: '"1"', now: '"2"', changedSincePreview: [{ path: "/email", from: "a@old.example", to: "b@other.example" }, { path: "/name", from: "Ana", to: "Ana L." }] }],
    },
  });

  it("a stale plan loses its decision buttons and says what changed since the preview", () => {
    expect(buttonIds(plan())).toContain("approve");
    expect(buttonIds(stale)).not.toContain("approve");
    expect(buttonIds(stale)).not.toContain("reject");
    expect(text(stale)).toContain("`/email` is now `\\\"b@other.example\\\"`, was `\\\"a@old.example\\\"` when you were asked (and 1 more change)");
  });

  it("an open plan whose target cannot be re-read says since when, in the context line", () => {
    expect(text(plan())).not.toContain("Could not re-check");
    const failing = plan({ watch: { checkedAt: null, failingSince: "2026-05-01T11:40:00.000Z" } });
    expect(text(failing)).toContain("Could not re-check the target since <!date^1777635600^{time}|2026-05-01T11:40:00Z>");
    // A final plan no longer shows it.
    expect(text({ ...failing, status: "rejected" })).not.toContain("Could not re-check");
  });

  it("an approval recorded without a re-check is marked so", () => {
    const approved = plan({ status: "approved", approvals: [{ userId: "UALICE01", via: "slack", at: "2026-05-01T11:00:00Z", recheckFailed: "could not re-check: target 'crm' answered HTTP 503" }] });
    expect(text(approved)).toContain("Approved without a re-check by <@UALICE01>");
    expect(text(plan({ status: "approved", approvals: [{ userId: "UALICE01", via: "slack", at: "2026-05-01T11:00:00Z" }] }))).not.toContain("without a re-check");
  });
});
