import type { PlanMessage } from "../../src/slack/plan-message.ts";
import { renderPlanMessage } from "../../src/slack/render.ts";

// The plan the Slack render tests start from: one pending merge on one contact, one approver.
// A test changes only what it is about through `overrides`.

export const PLAN_ID = "7b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e11";
export const PLAN_HASH = `sha256:${"0123456789abcdef".repeat(4)}`;

export function planMessage(overrides: Partial<PlanMessage> = {}): PlanMessage {
  return {
    planId: PLAN_ID,
    hash: PLAN_HASH,
    status: "pending",
    environment: "production",
    title: "Update Ana's email",
    agent: "crm-bot",
    expiresAt: "2026-05-01T12:00:00Z",
    reviewUrl: `https://countersign.example/plans/${PLAN_ID}`,
    actions: [
      {
        target: "crm",
        path: "/contacts/1",
        op: "merge",
        before: { email: "a@old.example" },
        after: { email: "a@new.example" },
        version: '"1"',
        changes: [{ path: "/email", from: "a@old.example", to: "a@new.example" }],
      },
    ],
    policy: { approvers: ["UALICE01"], requiredApprovals: 1 },
    approvals: [],
    ...overrides,
  };
}

/** The rendered message's blocks as one JSON string, to look for text in. */
export const blocksJson = (m: PlanMessage): string => JSON.stringify(renderPlanMessage(m).blocks);

/** The action_id of every button the rendered message offers, in order. */
export const buttonIds = (m: PlanMessage): string[] =>
  renderPlanMessage(m)
    .blocks.filter((b) => b.type === "actions")
    .flatMap((b) => (b.elements as { action_id: string }[]).map((e) => e.action_id));
