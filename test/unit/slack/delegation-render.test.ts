import { describe, expect, it } from "vitest";
import type { DelegationView } from "../../../src/service/delegation/index.ts";
import { renderHome } from "../../../src/slack/home-view.ts";
import { renderPlanMessage, renderThreadReply } from "../../../src/slack/render.ts";
import type { SlackMessage } from "../../../src/slack/plan-message.ts";
import { planMessage } from "../../support/plan-fixtures.ts";

const textOf = (m: SlackMessage) => `${m.text}\n${JSON.stringify(m.blocks)}`;
const AT = "2026-12-02T12:00:00.000Z";

describe("Bob for Alice, wherever a decision is told", () => {
  it("in the thread: an approval, the approved plan, a rejection and a revocation say for whom", () => {
    expect(textOf(renderThreadReply({ type: "decision.approve", userId: "U0BOB", for: "U0ALICE", approvals: 1, requiredApprovals: 2 }))).toContain(
      "Approval 1 of 2 by <@U0BOB> for <@U0ALICE>",
    );
    expect(textOf(renderThreadReply({ type: "plan.approved", approvers: ["U0BOB", "U0CAROL"], actedFor: { U0BOB: "U0ALICE" } }))).toContain(
      "Approved by <@U0BOB> for <@U0ALICE> <@U0CAROL>",
    );
    expect(textOf(renderThreadReply({ type: "plan.rejected", userId: "U0BOB", for: "U0ALICE", reason: "not now" }))).toContain(
      "Rejected by <@U0BOB> for <@U0ALICE>: not now",
    );
    expect(textOf(renderThreadReply({ type: "plan.revoked", userId: "U0BOB", for: "U0ALICE", reason: "hold" }))).toContain(
      "Revoked by <@U0BOB> for <@U0ALICE>: hold",
    );
    // A name from a payload is never a way to mention someone else: only user ids become mentions.
    expect(textOf(renderThreadReply({ type: "decision.approve", userId: "U0BOB", for: "<!channel>", approvals: 1, requiredApprovals: 2 }))).not.toContain(
      "<!channel>",
    );
  });

  it("a reminder mentions the delegate in place of the approver away, saying for whom", () => {
    const reply = renderThreadReply({
      type: "plan.reminder",
      expiresAt: AT,
      missing: ["U0BOB", "U0CAROL"],
      delegated: [{ userId: "U0BOB", for: "U0ALICE" }],
      approvals: 0,
      requiredApprovals: 1,
    });
    expect(textOf(reply)).toContain("<@U0BOB> (for <@U0ALICE>) <@U0CAROL>");
  });

  it("on the preview: approvals so far, and the approved status line", () => {
    const pending = renderPlanMessage(
      planMessage({
        status: "pending",
        policy: { approvers: ["U0ALICE", "U0BOB", "U0CAROL"], requiredApprovals: 2 },
        approvals: [{ userId: "U0BOB", via: "slack", at: AT, for: "U0ALICE" }],
      }),
    );
    expect(textOf(pending)).toContain("Approved so far (1 of 2): <@U0BOB> for <@U0ALICE>");
    const rejected = renderPlanMessage(planMessage({ status: "rejected", rejection: { userId: "U0BOB", reason: "no", for: "U0ALICE" } }));
    expect(textOf(rejected)).toContain("*Rejected* by <@U0BOB> for <@U0ALICE>: no");
  });
});

describe("the App Home's delegations", () => {
  const delegation = (overrides: Partial<DelegationView>): DelegationView => ({
    id: "6f1c7f1e-4a1b-4c1d-8e1f-0a1b2c3d4e5f",
    delegator: "U0ALICE",
    delegate: "U0BOB",
    until: "2026-12-21T05:00:00.000Z",
    targets: null,
    createdBy: "U0ALICE",
    createdAt: AT,
    endedAt: null,
    endedBy: null,
    active: true,
    ...overrides,
  });
  const home = { plans: [], total: 0, uncheckedGroups: [], listUrl: "https://countersign.example/plans" };

  it("says who decides for the person, and for whom they decide", () => {
    const delegations = [delegation({}), delegation({ delegator: "U0CAROL", delegate: "U0ALICE", targets: ["crm"] })];
    const view = JSON.stringify(renderHome({ ...home, viewer: "U0ALICE", delegations }).blocks);
    expect(view).toContain("<@U0BOB> decides for you until <!date^");
    expect(view).toContain("You decide for <@U0CAROL> on crm until <!date^");
  });

  it("says nothing of delegations when there are none", () => {
    expect(JSON.stringify(renderHome({ ...home, viewer: "U0ALICE", delegations: [] }).blocks)).not.toContain("decides for you");
  });
});
