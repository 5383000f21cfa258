import { beforeAll, describe, expect, it } from "vitest";
import type { ApproverDirectory } from "../../../src/service/context.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { type ErrorCode } from "../../../src/contract/error-codes.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { plansWaitingFor } from "../../../src/service/review/plans-for-person.ts";
import { listPlansForReview, reviewPlan } from "../../../src/service/review/review-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";

/**
 * An in-memory user group directory: the same port Slack's usergroups.users.list sits behind,
 * with groups that can be made to fail like a Slack outage.
 */
class TestDirectory implements ApproverDirectory {
  failing = new Set<string>();
  lookups = 0;
  constructor(private readonly groups: Record<string, string[]>) {}
  async membersOf(groupId: string): Promise<readonly string[]> {
    this.lookups++;
    if (this.failing.has(groupId)) throw new Error("ratelimited");
    return this.groups[groupId] ?? [];
  }
}

async function refusalCode(promise: Promise<unknown>): Promise<ErrorCode> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ServiceError) return err.code;
    throw err;
  }
  throw new Error("expected a refusal, got a result");
}

describe.each(databaseKinds)("who may read, and what waits for whom, on $name", (kind) => {
  /** crm: approvers Alice, Bob, Carol (quorum 2); hr: approvers Dave and user group S0HR. */
  const h = useHarness(kind, {
    defaults: { requiredApprovals: 2 },
    targets: (url) => ({ crm: targetConfig(url), hr: targetConfig(url, { policy: { approvers: ["U0DAVE", "S0HR"], requiredApprovals: 1 } }) }),
  });
  let directory: TestDirectory;
  /** browser.readers: Rita-the-reader and group S0AUDIT; admins: Oscar and group S0OPS. */
  let narrowed: ServiceContext;
  let crmPlan: PlanView;
  let hrPlan: PlanView;

  beforeAll(async () => {
    directory = new TestDirectory({ S0HR: ["U0HANNA", "U0REQUESTER"], S0AUDIT: ["U0AUDREY"], S0OPS: ["U0OLIVE"] });
    h.ctx.directory = directory;
    narrowed = { ...h.ctx, config: { ...h.ctx.config, browser: { ...h.ctx.config.browser, readers: ["U0READER", "S0AUDIT"] }, admins: ["U0OSCAR", "S0OPS"] } };
    crmPlan = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "crm plan" }) })).plan;
    hrPlan = (
      await submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "hr plan",
          actions: [{ kind: "http.json", target: "hr", path: "/contacts/2", op: "merge", body: { name: "B. Costa" } }],
        }),
      })
    ).plan;
  });

  const listed = async (ctx: ServiceContext, userId: string) =>
    (await listPlansForReview(ctx, { reader: { userId } }))
      .map((p) => p.plan.title)
      .filter((t) => t === "crm plan" || t === "hr plan")
      .sort();

  it("without browser.readers, anyone signed in reads every plan", async () => {
    expect((await reviewPlan(h.ctx, { planId: crmPlan.id, reader: { userId: "U0MALLORY" } })).plan.id).toBe(crmPlan.id);
    expect(await listed(h.ctx, "U0MALLORY")).toEqual(["crm plan", "hr plan"]);
  });

  it.each<[who: string, userId: string, expected: string[]]>([
    ["an outsider", "U0MALLORY", []],
    ["a listed reader", "U0READER", ["crm plan", "hr plan"]],
    ["a member of a reader group", "U0AUDREY", ["crm plan", "hr plan"]],
    ["an admin", "U0OSCAR", ["crm plan", "hr plan"]],
    ["a member of an admin group", "U0OLIVE", ["crm plan", "hr plan"]],
    ["a crm approver (by id) reads crm plans only", "U0ALICE", ["crm plan"]],
    ["an hr approver (by id) reads hr plans only", "U0DAVE", ["hr plan"]],
    ["an hr approver through a group reads hr plans only", "U0HANNA", ["hr plan"]],
  ])("with browser.readers and admins set, %s sees %j in the list and on the plan page", async (_who, userId, expected) => {
    expect(await listed(narrowed, userId)).toEqual(expected);
    for (const plan of [crmPlan, hrPlan]) {
      const title = plan.plan.title;
      if (expected.includes(title)) expect((await reviewPlan(narrowed, { planId: plan.id, reader: { userId } })).plan.id).toBe(plan.id);
      else expect(await refusalCode(reviewPlan(narrowed, { planId: plan.id, reader: { userId } }))).toBe("not_a_reader");
    }
  });

  it("an approver still reads a plan once it is decided", async () => {
    const plan = (
      await submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "decided hr plan",
          actions: [{ kind: "http.json", target: "hr", path: "/contacts/1", op: "merge", body: { name: "A. Lima" } }],
        }),
      })
    ).plan;
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0DAVE", via: "web" }, verdict: "reject", reason: "not now" });
    const reviewed = await reviewPlan(narrowed, { planId: plan.id, reader: { userId: "U0HANNA" } });
    expect(reviewed.plan.status).toBe("rejected");
    expect(reviewed.plan.whyNotDecide).toMatchObject({ code: "already_decided", status: "rejected" });
    expect(await refusalCode(reviewPlan(narrowed, { planId: plan.id, reader: { userId: "U0ALICE" } }))).toBe("not_a_reader");
  });

  it("someone who reads only what they approve still gets a full list: older plans of theirs behind newer ones they may not read", async () => {
    const hrChange = (n: number) =>
      mergeRequest({ title: `older hr plan ${n}`, actions: [{ kind: "http.json", target: "hr", path: "/contacts/2", op: "merge", body: { name: `B${n}` } }] });
    const older = [];
    // One second apart, so "newest first" has an order to keep.
    for (const n of [1, 2]) {
      h.clock.advance(1);
      older.push((await submitPlan(h.ctx, { agent: h.agent, request: hrChange(n) })).plan);
    }
    for (const n of [1, 2, 3]) {
      h.clock.advance(1);
      await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `newer crm plan ${n}` }) });
    }
    const dave = await listPlansForReview(narrowed, { reader: { userId: "U0DAVE" }, limit: 2 });
    expect(dave.map((p) => p.id)).toEqual([older[1]!.id, older[0]!.id]);
    const admin = await listPlansForReview(narrowed, { reader: { userId: "U0OSCAR" }, limit: 2 });
    expect(admin.map((p) => p.plan.title)).toEqual(["newer crm plan 3", "newer crm plan 2"]);
  });

  it("a plan id that is not a UUID, or no plan, is not_found whoever asks", async () => {
    expect(await refusalCode(reviewPlan(narrowed, { planId: "not-a-uuid", reader: { userId: "U0OSCAR" } }))).toBe("not_found");
    expect(await refusalCode(reviewPlan(narrowed, { planId: "00000000-0000-4000-8000-000000000000", reader: { userId: "U0MALLORY" } }))).toBe("not_found");
  });

  it("each plan says why this reader may not decide it now, by the same rule as decide()", async () => {
    const why = async (ctx: ServiceContext, planId: string, userId: string) => (await reviewPlan(ctx, { planId, reader: { userId } })).plan.whyNotDecide?.code;
    expect(await why(h.ctx, crmPlan.id, "U0ALICE")).toBeUndefined();
    expect(await why(h.ctx, crmPlan.id, "U0MALLORY")).toBe("not_an_approver");
    expect(await why(narrowed, crmPlan.id, "U0OSCAR")).toBe("not_an_approver");
    expect(await why(h.ctx, crmPlan.id, "U0REQUESTER")).toBe("self_approval");
    expect(await why(h.ctx, hrPlan.id, "U0HANNA")).toBeUndefined();
    expect(await why(h.ctx, hrPlan.id, "U0REQUESTER")).toBe("self_approval");

    const plan = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "half-approved crm plan" }) })).plan;
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "slack" }, verdict: "approve" });
    expect(await why(h.ctx, plan.id, "U0BOB")).toBe("already_voted");
    expect(await why(h.ctx, plan.id, "U0CAROL")).toBeUndefined();
    const listedForBob = (await listPlansForReview(h.ctx, { reader: { userId: "U0BOB" } })).find((p) => p.id === plan.id);
    expect(listedForBob?.whyNotDecide).toEqual({ code: "already_voted", approvals: ["U0BOB"], requiredApprovals: 2 });
  });

  it("when Slack cannot say who is in a group: the group's plans are neither readable nor decidable by membership, and each answer says so", async () => {
    directory.failing.add("S0HR");
    try {
      expect(await refusalCode(reviewPlan(narrowed, { planId: hrPlan.id, reader: { userId: "U0HANNA" } }))).toBe("approver_check_failed");
      expect(await listed(narrowed, "U0HANNA")).toEqual([]);
      // Without the narrowing, Hanna reads it, and is told why she has no buttons.
      expect((await reviewPlan(h.ctx, { planId: hrPlan.id, reader: { userId: "U0HANNA" } })).plan.whyNotDecide).toEqual({
        code: "approver_check_failed",
        groups: ["S0HR"],
      });
      // Someone named by id is unaffected.
      expect((await reviewPlan(narrowed, { planId: hrPlan.id, reader: { userId: "U0DAVE" } })).plan.whyNotDecide).toBeUndefined();
      const waiting = await plansWaitingFor(h.ctx, "U0HANNA");
      expect(waiting.plans.map((p) => p.id)).not.toContain(hrPlan.id);
      expect(waiting.uncheckedGroups).toEqual(["S0HR"]);
    } finally {
      directory.failing.delete("S0HR");
    }
  });

  it("what waits for a person: pending plans they may decide, leaving out those they approved, requested, or may not decide", async () => {
    const fresh = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "waiting crm plan" }) })).plan;
    const approvedByCarol = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "carol approved" }) })).plan;
    await decide(h.ctx, { planId: approvedByCarol.id, hash: approvedByCarol.hash, actor: { userId: "U0CAROL", via: "slack" }, verdict: "approve" });
    const short = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "about to expire", ttlSeconds: 60 }) })).plan;

    const ids = async (userId: string) => (await plansWaitingFor(h.ctx, userId)).plans.map((p) => p.id);
    const carol = await ids("U0CAROL");
    expect(carol).toContain(fresh.id);
    expect(carol).toContain(short.id);
    expect(carol).not.toContain(approvedByCarol.id);
    expect(carol).not.toContain(hrPlan.id);
    expect(await ids("U0ALICE")).toContain(approvedByCarol.id);
    expect(await ids("U0HANNA")).toContain(hrPlan.id);
    expect(await ids("U0REQUESTER")).toEqual([]);
    expect(await ids("U0MALLORY")).toEqual([]);

    h.clock.advance(61);
    expect(await ids("U0CAROL")).not.toContain(short.id);
    const first = (await plansWaitingFor(h.ctx, "U0CAROL")).plans.find((p) => p.id === fresh.id)!;
    expect(first).toEqual({
      id: fresh.id,
      title: "waiting crm plan",
      expiresAt: new Date(fresh.expiresAt),
      reviewUrl: `http://countersign.test/plans/${fresh.id}`,
      hash: fresh.hash,
      agent: h.agent.name,
      actions: [{ target: "crm", op: "merge" }],
      risk: "low",
      likeness: { key: expect.stringMatching(/^[0-9a-f]{32}$/), agent: h.agent.name, actions: [{ target: "crm", op: "merge", fields: ["/email"] }] },
    });
  });
});
