import { describe, expect, it } from "vitest";
import type { PlanDiff } from "../../../src/plan/plan-diff.ts";
import type { PlanMessage } from "../../../src/slack/plan-message.ts";
import { BLOCKS_JSON_BUDGET, renderPlanMessage, SLACK_LIMITS } from "../../../src/slack/render.ts";

const PLAN_ID = "7b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e11";
const OLD_HASH = `sha256:${"abcdef0123456789".repeat(4)}`;
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
    policy: { approvers: ["UALICE01"], requiredApprovals: 1 },
    approvals: [],
    ...overrides,
  };
}
const diff = (more: Partial<PlanDiff> = {}): PlanDiff => ({
  since: { id: "0b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e10", hash: OLD_HASH },
  added: [{ target: "crm", path: "/contacts/4", op: "create" }],
  removed: [{ target: "crm", path: "/contacts/2", op: "merge" }],
  changed: [{ target: "crm", path: "/contacts/1", op: "merge", changes: [{ path: "/email", from: "a@v1.example", to: "a@new.example" }] }],
  unchanged: 1,
  ...more,
});
const text = (m: PlanMessage) => JSON.stringify(renderPlanMessage(m).blocks);
const buttonIds = (m: PlanMessage) =>
  renderPlanMessage(m).blocks.filter((b) => b.type === "actions").flatMap((b) => (b.elements as { action_id: string }[]).map((e) => e.action_id));

describe("re-plans on the Slack message (issue 15)", () => {
  it("a re-plan's preview opens with what changed since the version it replaces, and keeps its buttons", () => {
    const shown = text(plan({ changedSince: diff() }));
    expect(shown).toContain("Changed since version `abcdef012345`* — 1 action unchanged");
    expect(shown).toContain("➕ added `create` on `crm` `/contacts/4`");
    expect(shown).toContain("➖ removed `merge` on `crm` `/contacts/2`");
    expect(shown).toContain("✏️ changed `merge` on `crm` `/contacts/1`");
    expect(shown).toContain("a@v1.example");
    expect(buttonIds(plan({ changedSince: diff() }))).toEqual(["approve", "reject", "view_full_plan"]);
    expect(text(plan())).not.toContain("Changed since");
  });

  it("the version it replaced points at it, without decision buttons; a stale one says it was replaced", () => {
    const supersededBy = { hash: `sha256:${"fedcba9876543210".repeat(4)}`, reviewUrl: "https://countersign.example/plans/next" };
    const old = plan({ status: "superseded", supersededBy });
    expect(text(old)).toContain("*Superseded* by <https://countersign.example/plans/next|version fedcba987654> — decide on that one");
    expect(buttonIds(old)).toEqual(["view_full_plan"]);
    expect(text(plan({ status: "stale", supersededBy }))).toContain("Replaced by <https://countersign.example/plans/next|version fedcba987654>");
  });

  it("a huge diff stays within Slack's limits, the rest counted, the buttons kept", () => {
    const big = "x".repeat(100_000);
    const changed = Array.from({ length: 20 }, (_, i) => ({ target: "crm", path: `/contacts/${i}`, op: "replace" as const, wasOp: "merge" as const, changes: Array.from({ length: 500 }, (_, j) => ({ path: `/f${j}`, from: big, to: `${big}!` })) }));
    const actions = changed.map((c) => ({ target: "crm", path: c.path, op: c.op, before: { v: big }, after: { v: big }, version: '"1"', changes: c.changes }));
    const message = renderPlanMessage(plan({ actions, changedSince: diff({ changed, added: changed.map((c) => ({ ...c })), removed: [] }) }));
    expect(JSON.stringify(message.blocks).length).toBeLessThanOrEqual(BLOCKS_JSON_BUDGET);
    expect(message.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    expect(JSON.stringify(message.blocks)).toMatch(/more lines — see full plan/);
    expect(buttonIds(plan({ actions, changedSince: diff({ changed }) }))).toContain("approve");
  });
});
