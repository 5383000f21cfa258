import { describe, expect, it } from "vitest";
import type { WaitingPlan } from "../../../src/service/review/plans-for-person.ts";
import { HOME_MAX_BLOCKS, HOME_SHOWN, renderHome, type HomeContent } from "../../../src/slack/home-view.ts";
import type { Block } from "../../../src/slack/plan-message.ts";
import { renderPlanMessage } from "../../../src/slack/render.ts";
import { validateHomeView, type JsonObject } from "../../support/slack-emulator.ts";

const HASH = `sha256:${"0123456789abcdef".repeat(4)}`;
const LIST = "https://countersign.example/plans?status=pending";

function waiting(i: number, overrides: Partial<WaitingPlan> = {}): WaitingPlan {
  const id = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
  return {
    id,
    title: `Update contact ${i}`,
    expiresAt: new Date(Date.UTC(2026, 11, 3, 9, i)),
    reviewUrl: `https://countersign.example/plans/${id}`,
    hash: HASH,
    agent: "crm-bot",
    actions: [{ target: "crm", op: "merge" }],
    ...overrides,
  };
}

function home(overrides: Partial<HomeContent> = {}): HomeContent {
  const plans = overrides.plans ?? [waiting(1), waiting(2)];
  return { plans, total: plans.length, uncheckedGroups: [], listUrl: LIST, ...overrides };
}

const elementsOf = (blocks: Block[]) => blocks.flatMap((b) => (b.type === "actions" ? (b.elements as Block[]) : []));
const textOf = (blocks: Block[]) => JSON.stringify(blocks);

describe("App Home view", () => {
  it("shows each plan with the preview's own Approve/Reject buttons (same action ids, values and confirm) and a link to it", () => {
    const plan = waiting(7, {
      actions: [
        { target: "crm", op: "merge" },
        { target: "billing", op: "put" },
      ],
    });
    const view = renderHome(home({ plans: [plan] }));
    expect(view.type).toBe("home");
    const preview = renderPlanMessage({
      planId: plan.id,
      hash: plan.hash,
      status: "pending",
      environment: "test",
      title: plan.title,
      agent: plan.agent,
      expiresAt: plan.expiresAt.toISOString(),
      reviewUrl: plan.reviewUrl,
      actions: plan.actions.map((a) => ({ ...a, path: "/x", before: null, after: null, version: null, changes: [] })) as never,
      policy: { approvers: [], requiredApprovals: 1 },
      approvals: [],
    });
    expect(elementsOf(view.blocks)).toEqual(elementsOf(preview.blocks));
    const approve = elementsOf(view.blocks).find((e) => e.action_id === "approve")!;
    expect(JSON.parse(approve.value as string)).toEqual({ planId: plan.id, hash: plan.hash });
    expect(textOf(view.blocks)).toContain("crm (merge), billing (put)");
    expect(textOf(view.blocks)).toContain("0123456789ab");
  });

  it("keeps the order it is given (soonest expiry first) and counts them", () => {
    const plans = [waiting(1), waiting(2), waiting(3)];
    const view = renderHome(home({ plans }));
    const values = elementsOf(view.blocks)
      .filter((e) => e.action_id === "approve")
      .map((e) => JSON.parse(e.value as string).planId);
    expect(values).toEqual(plans.map((p) => p.id));
    expect(textOf(view.blocks)).toContain("3 plans wait for you, soonest expiry first.");
  });

  it("has an empty state without buttons", () => {
    const view = renderHome(home({ plans: [], total: 0 }));
    expect(textOf(view.blocks)).toContain("Nothing is waiting for your decision.");
    expect(elementsOf(view.blocks)).toEqual([]);
  });

  it("caps the plans under Slack's 100 blocks and links the rest to the browser list", () => {
    const plans = Array.from({ length: 200 }, (_, i) => waiting(i));
    const view = renderHome(home({ plans, total: 250, uncheckedGroups: ["S0FLAKY"], notice: "This plan is already approved; your click changed nothing." }));
    expect(view.blocks.length).toBeLessThanOrEqual(HOME_MAX_BLOCKS);
    expect(elementsOf(view.blocks).filter((e) => e.action_id === "approve")).toHaveLength(HOME_SHOWN);
    const last = view.blocks.at(-1)!;
    expect(JSON.stringify(last)).toContain(`…and ${250 - HOME_SHOWN} more — <${LIST}|open the list>`);
    expect(textOf(view.blocks)).toContain(`(the first ${HOME_SHOWN} here)`);
    expect(validateHomeView(view as unknown as JsonObject)).toEqual([]);
  });

  it("offers 'Review N like plans' for each group of alike plans, within the 100 blocks even when full", () => {
    const plans = Array.from({ length: 200 }, (_, i) => waiting(i));
    const alike = Array.from({ length: 7 }, (_, i) => ({ like: plans[i]!.id, count: 30 - i, summary: `crm merge /f${i} <!channel>` }));
    const view = renderHome(home({ plans, total: 250, alike, uncheckedGroups: ["S0FLAKY"], notice: "Noticed." }));
    expect(view.blocks.length).toBeLessThanOrEqual(HOME_MAX_BLOCKS);
    expect(elementsOf(view.blocks).filter((e) => e.action_id === "approve")).toHaveLength(HOME_SHOWN);
    const offers = elementsOf(view.blocks).filter((e) => String(e.action_id).startsWith("batch_open_"));
    expect(offers.map((e) => [e.action_id, (e.text as { text: string }).text, e.value])).toEqual(
      alike.slice(0, 5).map((o, i) => [`batch_open_${i}`, `Review ${o.count} like plans`, JSON.stringify({ like: o.like })]),
    );
    expect(textOf(view.blocks)).toContain("30 × crm merge /f0 &lt;!channel&gt;");
    expect(validateHomeView(view as unknown as JsonObject)).toEqual([]);
    expect(textOf(renderHome(home()).blocks)).not.toContain("batch_open");
  });

  it("shows agent text literally, never as mrkdwn, links or mentions", () => {
    const view = renderHome(home({ plans: [waiting(1, { title: "*urgent* <!channel> <https://evil.example|click>", agent: "bot_<@U0BOSS>" })] }));
    const text = textOf(view.blocks);
    expect(text).not.toContain("<!channel>");
    expect(text).not.toContain("<https://evil.example");
    expect(text).not.toContain("<@U0BOSS>");
    expect(validateHomeView(view as unknown as JsonObject)).toEqual([]);
  });

  it("tells the clicker what became of their click, and names groups Slack could not answer for", () => {
    const view = renderHome(home({ notice: "You already approved this plan; one person counts once.", uncheckedGroups: ["S0FLAKY"] }));
    expect(textOf(view.blocks.slice(0, 3))).toContain("You already approved this plan");
    expect(textOf(view.blocks)).toContain("S0FLAKY");
  });
});
