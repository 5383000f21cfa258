import { describe, expect, it } from "vitest";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useSubmitHarness } from "./submit-plan-setup.ts";

describe.each(databaseKinds)("submitPlan on $name", (kind) => {
  const { h, planCount } = useSubmitHarness(kind);
  /** Same database; two targets over the same server with different policy overrides. */
  const hMulti = h.another({
    defaults: { approvers: ["U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"] },
    targets: (url) => ({
      crm: targetConfig(url, { policy: { approvers: ["U0CAROL", "U0ALICE", "U0BOB"], requiredApprovals: 1, ttl: { default: 900, max: 3600 } } }),
      billing: targetConfig(url, { policy: { approvers: ["U0DAVE", "U0CAROL", "U0BOB"], requiredApprovals: 2, ttl: { default: 600, max: 86_400 } } }),
    }),
  });
  /** Same database; the requester is the only approver. */
  const hSolo = h.another({ defaults: { approvers: ["U0ALICE"], requiredApprovals: 1 } });

  it("refuses a plan whose only approver is the requester (policy_denied), storing nothing", async () => {
    const rows = await planCount();
    const from = hSolo.target.requests.length;
    const err = await refusal(submitPlan(hSolo.ctx, { agent: hSolo.agent, request: mergeRequest({ onBehalfOf: "U0ALICE" }) }));
    expect(err.code).toBe("policy_denied");
    expect(await planCount()).toBe(rows);
    expect(hSolo.target.requests.length).toBe(from);
    // The same plan for someone else is fine.
    const { plan } = await submitPlan(hSolo.ctx, { agent: hSolo.agent, request: mergeRequest({ onBehalfOf: "U0REQUESTER" }) });
    expect(plan.plan.policy).toEqual({
      approvers: ["U0ALICE"],
      requiredApprovals: 1,
      grantTtlSeconds: 600,
      rule: "defaults",
      risk: { level: "low", rule: "defaults.risk" },
    });
  });

  describe("a plan over several targets", () => {
    const twoTargets = [
      { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@two.example" } },
      { kind: "http.json", target: "billing", path: "/contacts/2", op: "merge", body: { email: "bruno@two.example" } },
    ];

    it("lives under the intersection of their policies: common approvers, largest quorum, shortest TTL", async () => {
      const submittedAt = hMulti.clock.now();
      const { plan } = await submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "Two targets", actions: twoTargets }) });
      expect(plan.plan.policy).toEqual({
        approvers: ["U0BOB", "U0CAROL"],
        requiredApprovals: 2,
        grantTtlSeconds: 600,
        rule: "targets.crm.policy + targets.billing.policy",
        risk: { level: "low", rule: "defaults.risk" },
      });
      expect(plan.expiresAt).toBe(new Date(submittedAt.getTime() + 600_000).toISOString());
      expect(fingerprint(plan.plan)).toBe(plan.hash);
    });

    it("a plan over one of them keeps that target's own policy", async () => {
      const { plan: crmOnly } = await submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "crm only", actions: [twoTargets[0]] }) });
      expect(crmOnly.plan.policy).toEqual({
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        grantTtlSeconds: 600,
        rule: "targets.crm.policy",
        risk: { level: "low", rule: "defaults.risk" },
      });
      const { plan: billingOnly } = await submitPlan(hMulti.ctx, {
        agent: hMulti.agent,
        request: mergeRequest({ title: "billing only", actions: [twoTargets[1]] }),
      });
      expect(billingOnly.plan.policy).toEqual({
        approvers: ["U0BOB", "U0CAROL", "U0DAVE"],
        requiredApprovals: 2,
        grantTtlSeconds: 600,
        rule: "targets.billing.policy",
        risk: { level: "low", rule: "defaults.risk" },
      });
    });

    it("is bounded by the smallest TTL maximum", async () => {
      const rows = await planCount();
      const err = await refusal(
        submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "Too long", actions: twoTargets, ttlSeconds: 3601 }) }),
      );
      expect(err.code).toBe("invalid_request");
      expect(err.issues).toEqual([expect.objectContaining({ path: "/ttlSeconds" })]);
      expect(await planCount()).toBe(rows);
    });

    it("is refused when the requester leaves too few common approvers for the quorum", async () => {
      const rows = await planCount();
      const err = await refusal(
        submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "Bob asks", actions: twoTargets, onBehalfOf: "U0BOB" }) }),
      );
      expect(err.code).toBe("policy_denied");
      expect(await planCount()).toBe(rows);
    });
  });
});

describe.each(databaseKinds)("risk levels on $name", (kind) => {
  const h = useHarness(kind, {
    defaults: { highRisk: { requiredApprovals: 2, ttlMax: 600 } },
    targets: (url) => ({ crm: targetConfig(url, { policy: { riskByOp: { delete: "high" } } }) }),
  });

  it("a high-risk plan records its risk and the rule, needs more approvals and gets less time", async () => {
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "delete" }] }),
    });
    expect(plan.plan.policy).toMatchObject({ requiredApprovals: 2, risk: { level: "high", rule: "targets.crm.policy.riskByOp.delete" } });
    expect(Date.parse(plan.expiresAt) - h.clock.now().getTime()).toBe(600_000);
    expect(plan.hash).toBe(fingerprint(plan.plan));
    const low = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() })).plan;
    expect(low.plan.policy).toMatchObject({ requiredApprovals: 1, risk: { level: "low", rule: "defaults.risk" } });
  });
});
