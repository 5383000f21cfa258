import { describe, expect, it } from "vitest";
import type { PlanDiff } from "../../../src/policy/plan-diff.ts";
import { BLOCKS_JSON_BUDGET, renderPlanMessage, SLACK_LIMITS } from "../../../src/slack/render.ts";
import { blocksJson, buttonIds, planMessage } from "../../support/plan-fixtures.ts";

const OLD_HASH = `sha256:${"abcdef0123456789".repeat(4)}`;
const diff = (more: Partial<PlanDiff> = {}): PlanDiff => ({
  since: { id: "0b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e10", hash: OLD_HASH },
  added: [{ target: "crm", path: "/contacts/4", op: "create" }],
  removed: [{ target: "crm", path: "/contacts/2", op: "merge" }],
  changed: [{ target: "crm", path: "/contacts/1", op: "merge", changes: [{ path: "/email", from: "a@v1.example", to: "a@new.example" }] }],
  unchanged: 1,
  ...more,
});

describe("re-plans on the Slack message (issue 15)", () => {
  it("a re-plan's preview opens with what changed since the version it replaces, and keeps its buttons", () => {
    const shown = blocksJson(planMessage({ changedSince: diff() }));
    expect(shown).toContain("Changed since version `abcdef012345`* — 1 action unchanged");
    expect(shown).toContain("➕ added `create` on `crm` `/contacts/4`");
    expect(shown).toContain("➖ removed `merge` on `crm` `/contacts/2`");
    expect(shown).toContain("✏️ changed `merge` on `crm` `/contacts/1`");
    expect(shown).toContain("a@v1.example");
    expect(buttonIds(planMessage({ changedSince: diff() }))).toEqual(["approve", "reject", "view_full_plan"]);
    expect(blocksJson(planMessage())).not.toContain("Changed since");
  });

  it("the version it replaced points at it, without decision buttons; a stale one says it was replaced", () => {
    const supersededBy = { hash: `sha256:${"fedcba9876543210".repeat(4)}`, reviewUrl: "https://countersign.example/plans/next" };
    const old = planMessage({ status: "superseded", supersededBy });
    expect(blocksJson(old)).toContain("*Superseded* by <https://countersign.example/plans/next|version fedcba987654> — decide on that one");
    expect(buttonIds(old)).toEqual(["view_full_plan"]);
    expect(blocksJson(planMessage({ status: "stale", supersededBy }))).toContain("Replaced by <https://countersign.example/plans/next|version fedcba987654>");
  });

  it("a huge diff stays within Slack's limits, the rest counted, the buttons kept", () => {
    const big = "x".repeat(100_000);
    const changed = Array.from({ length: 20 }, (_, i) => ({
      target: "crm",
      path: `/contacts/${i}`,
      op: "replace" as const,
      wasOp: "merge" as const,
      changes: Array.from({ length: 500 }, (_, j) => ({ path: `/f${j}`, from: big, to: `${big}!` })),
    }));
    const actions = changed.map((c) => ({ target: "crm", path: c.path, op: c.op, before: { v: big }, after: { v: big }, version: '"1"', changes: c.changes }));
    const message = renderPlanMessage(planMessage({ actions, changedSince: diff({ changed, added: changed.map((c) => ({ ...c })), removed: [] }) }));
    expect(JSON.stringify(message.blocks).length).toBeLessThanOrEqual(BLOCKS_JSON_BUDGET);
    expect(message.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    expect(JSON.stringify(message.blocks)).toMatch(/more lines — see full plan/);
    expect(buttonIds(planMessage({ actions, changedSince: diff({ changed }) }))).toContain("approve");
  });
});
