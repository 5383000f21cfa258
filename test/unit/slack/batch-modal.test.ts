import { describe, expect, it } from "vitest";
import type { BatchDecision, BatchPlan, BatchView } from "../../../src/service/batch/index.ts";
import {
  batchDecidedView,
  batchNoticeView,
  batchOpeningView,
  batchRejectView,
  batchView,
  batchWorkingView,
  resultText,
  SLACK_BATCH_PLANS,
  tallyOf,
} from "../../../src/slack/batch-modal.ts";
import { validateView, type JsonObject } from "../../support/slack-emulator.ts";

const HASH = (i: number) => `sha256:${String(i).padStart(4, "0")}${"ab".repeat(30)}`;
const URL = "https://countersign.example";

function plan(i: number, over: Partial<BatchPlan> = {}): BatchPlan {
  const planId = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
  return {
    planId,
    hash: HASH(i),
    title: `Update contact ${i}`,
    status: "pending",
    expiresAt: "2026-12-03T08:15:00.000Z",
    reviewUrl: `${URL}/plans/${planId}`,
    actions: [{ target: "crm", path: `/contacts/${i}`, op: "merge", changes: [{ path: "/email", from: `c${i}@old.example`, to: `c${i}@new.example` }] }],
    ...over,
  };
}

function batch(n: number, over: Partial<BatchView> = {}): BatchView {
  return {
    id: "11111111-2222-4333-8444-555555555555",
    reviewer: "U0ALICE",
    via: "slack",
    alike: "crm merge /email",
    agent: "crm-bot",
    createdAt: "2026-12-03T08:00:00.000Z",
    expiresAt: "2026-12-03T08:10:00.000Z",
    more: 0,
    plans: Array.from({ length: n }, (_, i) => plan(i + 1)),
    url: `${URL}/batches/11111111-2222-4333-8444-555555555555`,
    ...over,
  };
}

const valid = (view: unknown) => validateView(view as JsonObject);
const textOf = (view: unknown) => JSON.stringify(view);

describe("the batch modal", () => {
  it("shows each plan's title, short hash and change; Approve-all submits, Reject-all asks for the reason", () => {
    const view = batchView(batch(3)) as unknown as JsonObject;
    expect(valid(view)).toEqual([]);
    expect(view.callback_id).toBe("batch_approve");
    expect(JSON.parse(view.private_metadata as string)).toEqual({ batchId: "11111111-2222-4333-8444-555555555555" });
    expect(view.submit).toMatchObject({ text: "Approve all 3" });
    const text = textOf(view);
    for (let i = 1; i <= 3; i++) {
      expect(text).toContain(`*Update contact ${i}* \`${HASH(i).slice(7, 19)}\``);
      expect(text).toContain(`• \`/email\`: \`\\"c${i}@old.example\\"\` → \`\\"c${i}@new.example\\"\``);
    }
    expect(text).toContain("*3 like plans* from `crm-bot`: crm merge /email");
    const reject = (view.blocks as JsonObject[])
      .flatMap((b) => (b.type === "actions" ? (b.elements as JsonObject[]) : []))
      .find((e) => e.action_id === "batch_reject_open")!;
    expect(JSON.parse(reject.value as string)).toEqual({ batchId: "11111111-2222-4333-8444-555555555555", count: 3 });
  });

  it("holds at most 20 plans within Slack's limits, however long their text, and links the rest to the browser", () => {
    const long = (i: number) =>
      plan(i, {
        title: "Ω".repeat(200),
        actions: Array.from({ length: 5 }, (_, a) => ({
          target: "t".repeat(100),
          path: `/${"p".repeat(300)}`,
          op: "merge",
          changes: Array.from({ length: 10 }, (_, c) => ({ path: `/f${c}${"x".repeat(200)}`, from: "v".repeat(500), to: { deep: "w".repeat(500) } })),
        })),
      });
    const view = batchView(batch(0, { plans: Array.from({ length: SLACK_BATCH_PLANS }, (_, i) => long(i)), more: 30 })) as unknown as JsonObject;
    expect(valid(view)).toEqual([]);
    expect((view.blocks as unknown[]).filter((b) => (b as JsonObject).type === "section")).toHaveLength(SLACK_BATCH_PLANS + 1);
    const text = textOf(view);
    expect(text).toContain(
      `30 more alike plans wait for you than this batch holds: <${URL}/plans/00000000-0000-4000-8000-000000000000/alike|review up to 50 in the browser>`,
    );
    expect(text).toContain("… 3 more actions — open the plan");
    expect(text).toContain("… 7 more — open the plan");
  });

  it("shows agent text literally: no mention, broadcast, link or formatting can fire", () => {
    const evil = plan(1, {
      title: "<!channel> *bold* <https://evil.example|click>",
      actions: [{ target: "crm", path: "/c/<@U0BOSS>", op: "merge", changes: [{ path: "/x`<!here>", to: "<!everyone>" }] }],
    });
    const text = textOf(batchView(batch(0, { plans: [evil], alike: "crm merge /<!here>", agent: "bot <@U0ADMIN>" })));
    for (const token of ["<!channel>", "<https://evil.example", "<@U0BOSS>", "<!here>", "<!everyone>", "<@U0ADMIN>"]) expect(text).not.toContain(token);
  });

  it("the reject dialog asks one required reason for every plan; the passing views are valid", () => {
    const view = batchRejectView({ batchId: "b", rootViewId: "V1" }, 12) as unknown as JsonObject;
    expect(valid(view)).toEqual([]);
    expect(view.callback_id).toBe("batch_reject");
    expect(view.submit).toMatchObject({ text: "Reject all 12" });
    expect(JSON.parse(view.private_metadata as string)).toEqual({ batchId: "b", rootViewId: "V1" });
    expect((view.blocks as JsonObject[])[0]).toMatchObject({ type: "input", block_id: "reason", element: { action_id: "reason", type: "plain_text_input" } });
    for (const v of [batchOpeningView(), batchWorkingView("approve"), batchWorkingView("reject"), batchNoticeView("Nothing was decided.")])
      expect(valid(v)).toEqual([]);
  });
});

describe("the batch's answer", () => {
  const decision: BatchDecision = {
    batchId: "b",
    verdict: "approve",
    outcomes: [
      { planId: "p1", hash: HASH(1), title: "One", reviewUrl: `${URL}/plans/p1`, result: { kind: "approved" } },
      { planId: "p2", hash: HASH(2), title: "Two", reviewUrl: `${URL}/plans/p2`, result: { kind: "counted", approvals: 1, requiredApprovals: 2 } },
      {
        planId: "p3",
        hash: HASH(3),
        title: "Three",
        reviewUrl: `${URL}/plans/p3`,
        result: { kind: "refused", code: "already_decided", message: "this plan is already stale", status: "stale" },
      },
      { planId: "p4", hash: HASH(4), title: "Four", reviewUrl: `${URL}/plans/p4`, result: { kind: "refused", code: "self_approval", message: "…" } },
      { planId: "p5", hash: HASH(5), title: "Five", reviewUrl: `${URL}/plans/p5`, result: { kind: "refused", code: "target_changed", message: "…" } },
      { planId: "p6", hash: HASH(6), title: "Six", reviewUrl: `${URL}/plans/p6`, result: { kind: "failed", message: "the database was unreachable" } },
    ],
  };

  it("reports per plan: approved, approval counted (n of m), or refused with its code", () => {
    expect(resultText(decision.outcomes[0]!.result)).toBe("✅ approved");
    expect(resultText(decision.outcomes[1]!.result)).toBe("☑️ approval counted (1 of 2)");
    expect(resultText(decision.outcomes[2]!.result)).toBe("⛔ refused `already_decided`: it is already decided (stale)");
    expect(resultText(decision.outcomes[3]!.result)).toBe("⛔ refused `self_approval`: it was requested on your behalf, or you edited it or asked for it");
    expect(resultText(decision.outcomes[4]!.result)).toBe("⛔ refused `target_changed`: its target changed since the preview; it is stale now");
    expect(tallyOf(decision)).toBe("1 approved · 1 approval counted · 3 refused · 1 failed");
    const view = batchDecidedView(decision);
    expect(valid(view)).toEqual([]);
    const text = textOf(view);
    expect(text).toContain("⛔ refused `self_approval`: it was requested on your behalf, or you edited it or asked for it — *Four* `0004abababab`");
  });

  it("50 results stay within Slack's limits", () => {
    const many: BatchDecision = {
      ...decision,
      outcomes: Array.from({ length: 50 }, (_, i) => ({ ...decision.outcomes[i % 6]!, title: "Ω".repeat(300) })),
    };
    expect(valid(batchDecidedView(many))).toEqual([]);
  });
});
