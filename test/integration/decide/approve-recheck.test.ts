import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { reviewPlan } from "../../../src/service/review/review-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { PlanBody } from "../../../src/web/plan-page.tsx";
import { auditEvents, decisions, plans } from "../../../src/store/schema.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";

let seq = 0;
async function submit(h: HarnessView, path: string, body: Record<string, unknown> = { email: `new${++seq}@example.com` }) {
  const { plan } = await submitPlan(h.ctx, {
    agent: h.agent,
    request: mergeRequest({ title: `re-checked plan ${++seq}`, actions: [{ kind: "http.json", target: "crm", path, op: "merge", body }] }),
  });
  return plan;
}
const approve = (h: HarnessView, plan: { id: string; hash: string }, userId = "U0ALICE") =>
  decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId, via: "web" }, verdict: "approve" });
const refusalOf = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected a refusal");
    },
    (err: unknown) => {
      if (!(err instanceof ServiceError)) throw err;
      return err;
    },
  );
const readsOf = (h: HarnessView, path: string) => h.target.requests.filter((r) => r.method === "GET" && r.path === path).length;

describe.each(databaseKinds)("the Approve re-check ($name)", (kind) => {
  // Watching off: only the click re-reads here.
  const h = useHarness(kind, { targets: (url) => ({ crm: targetConfig(url, { watch: { intervalSeconds: 0 } }) }) });
  const quorum2 = h.another({ defaults: { requiredApprovals: 2 }, targets: (url) => ({ crm: targetConfig(url, { watch: { intervalSeconds: 0 } }) }) });

  const countDecisions = (planId: string) => h.database.db.$count(decisions, eq(decisions.planId, planId));
  const statusOf = async (planId: string) => (await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, planId)))[0]!.status;

  it("a target changed since the preview: refused with target_changed saying what changed, nothing recorded, the plan stale by the system", async () => {
    h.target.set("/contacts/7", { id: 7, name: "Gil", email: "gil@old.example", apiToken: "tok-1" });
    const plan = await submit(h, "/contacts/7");
    h.target.set("/contacts/7", { id: 7, name: "Gil", email: "gil@other.example", apiToken: "tok-2" });

    const err = await refusalOf(approve(h, plan));
    expect(err.code).toBe("target_changed");
    expect(err.message).toContain('/email is now "gil@other.example", was "gil@old.example"');
    // Masked exactly as previews are: a secret field's values never reach the person.
    expect(err.message).not.toContain("tok-");
    expect(err.details).toMatchObject({
      changes: [
        {
          target: "crm",
          path: "/contacts/7",
          changedSincePreview: expect.arrayContaining([{ path: "/email", from: "gil@old.example", to: "gil@other.example" }]),
        },
      ],
    });
    expect(await countDecisions(plan.id)).toBe(0);
    expect(await statusOf(plan.id)).toBe("stale");
    const seen = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
    expect(seen.outcome).toMatchObject({ status: "stale", actions: [{ status: "stale", now: h.target.etagOf("/contacts/7") }] });
    const [event] = await h.database.db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, plan.id), eq(auditEvents.type, "plan.stale")));
    expect(event!.actor).toMatchObject({ type: "system", process: "approve re-check" });
    // The browser page says it too, masked like the preview.
    const page = String(PlanBody({ reviewed: await reviewPlan(h.ctx, { planId: plan.id, reader: { userId: "U0ALICE" } }), session: undefined }));
    expect(page).toContain(
      "<code>/email</code> is now <code>&quot;gil@other.example&quot;</code>, was <code>&quot;gil@old.example&quot;</code> when you were asked",
    );
    expect(page).not.toContain("tok-");
    // A second click is told the plan is already decided (stale). Only the locked read can tell,
    // so its target was read before it, but the read is never judged.
    const reads = readsOf(h, "/contacts/7");
    expect((await refusalOf(approve(h, plan, "U0BOB"))).code).toBe("already_decided");
    expect(readsOf(h, "/contacts/7")).toBe(reads + 1);
  });

  it("comes last: a non-approver, the requester or an old page is answered as before and nothing is read; a second vote is answered as before, its read not judged", async () => {
    h.target.set("/contacts/8", { id: 8, name: "Hugo", email: "hugo@old.example" });
    const plan = await submit(h, "/contacts/8");
    h.target.set("/contacts/8", { id: 8, name: "Hugo", email: "hugo@other.example" });
    const reads = readsOf(h, "/contacts/8");
    expect((await refusalOf(approve(h, plan, "U0MALLORY"))).code).toBe("not_an_approver");
    expect((await refusalOf(approve(h, plan, "U0REQUESTER"))).code).toBe("self_approval");
    expect((await refusalOf(approve(h, { id: plan.id, hash: `sha256:${"0".repeat(64)}` }))).code).toBe("hash_mismatch");
    expect(readsOf(h, "/contacts/8")).toBe(reads);
    expect(await statusOf(plan.id)).toBe("pending");

    quorum2.target.set("/contacts/8", { id: 8, name: "Hugo", email: "hugo@old.example" });
    const two = await submit(quorum2, "/contacts/8");
    expect((await approve(quorum2, two)).status).toBe("pending");
    quorum2.target.set("/contacts/8", { id: 8, name: "Hugo", email: "hugo@third.example" });
    const before = readsOf(quorum2, "/contacts/8");
    // The target changed, but the second vote is refused as one, and the plan stays pending.
    expect((await refusalOf(approve(quorum2, two))).code).toBe("already_voted");
    expect(readsOf(quorum2, "/contacts/8")).toBe(before + 1);
    expect(await statusOf(two.id)).toBe("pending");
    // The next approver's click reads, and finds the change.
    expect((await refusalOf(approve(quorum2, two, "U0BOB"))).code).toBe("target_changed");
    expect(await h.database.db.$count(decisions, eq(decisions.planId, two.id))).toBe(1);
  });

  it("a target that already holds the plan's change (made by someone else) is not a change: approved, and the executor reconciles with zero writes", async () => {
    h.target.set("/contacts/12", { id: 12, name: "Joana", email: "joana@old.example" });
    const plan = await submit(h, "/contacts/12", { email: "joana@new.example" });
    // The same change, under a new ETag, with a field of its own.
    h.target.set("/contacts/12", { id: 12, name: "Joana", email: "joana@new.example", touchedBy: "crm-ui" });
    const result = await approve(h, plan);
    expect(result.status).toBe("approved");
    expect(result.recheckFailed).toBeUndefined();

    let claim = (await claimApproved(h.ctx))!;
    while (claim.plan.id !== plan.id) claim = (await claimApproved(h.ctx))!;
    const writes = h.target.writes().length;
    const write = targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    const outcome = await executePlan(claim, executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crm: write }, h.clock.now));
    expect(outcome).toMatchObject({ status: "applied", reconciled: true });
    expect(h.target.writes().length).toBe(writes);
  });

  it("a target that cannot be re-read: the approval is recorded, marked could not re-check", async () => {
    h.target.set("/contacts/9", { id: 9, name: "Ines", email: "ines@old.example" });
    const plan = await submit(h, "/contacts/9");
    h.target.failWith = { status: 503, body: "maintenance" };
    const result = await approve(h, plan).finally(() => (h.target.failWith = undefined));
    expect(result.status).toBe("approved");
    expect(result.recheckFailed).toMatch(/^could not re-check: .*HTTP 503/);
    const [decision] = await h.database.db.select().from(decisions).where(eq(decisions.planId, plan.id));
    expect(decision!.recheckFailed).toMatch(/^could not re-check/);
    const [event] = await h.database.db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, plan.id), eq(auditEvents.type, "decision.approve")));
    expect(event!.data).toMatchObject({ recheckFailed: expect.stringMatching(/^could not re-check/) });
    // Shown as such wherever the approval is: the agent's view, the browser page.
    expect(String(PlanBody({ reviewed: await reviewPlan(h.ctx, { planId: plan.id, reader: { userId: "U0ALICE" } }), session: undefined }))).toContain(
      'data-recheck="failed"',
    );
    expect((await getPlan(h.ctx, { agent: h.agent, planId: plan.id })).approvals).toEqual([
      { userId: "U0ALICE", via: "web", at: expect.any(String), recheckFailed: expect.stringMatching(/^could not re-check: .*HTTP 503/) },
    ]);
  });

  it("a target edited between the click's re-read and the transaction: the approval stands, the executor refuses, one stale outcome", async () => {
    h.target.set("/contacts/10", { id: 10, name: "Joana", email: "joana@old.example" });
    const plan = await submit(h, "/contacts/10");
    // The re-read is answered with the old state; the edit lands right behind it.
    h.target.beforeAnswer = (request) => {
      if (request.method === "GET" && request.path === "/contacts/10") {
        h.target.beforeAnswer = undefined;
        h.target.set("/contacts/10", { id: 10, name: "Joana", email: "joana@sneaky.example" });
      }
    };
    const result = await approve(h, plan).finally(() => (h.target.beforeAnswer = undefined));
    expect(result).toMatchObject({ status: "approved" });
    expect(result.recheckFailed).toBeUndefined();

    const write = targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    // Approved plans of the other tests are claimed first (oldest first) and left executing.
    let claim = (await claimApproved(h.ctx))!;
    while (claim.plan.id !== plan.id) claim = (await claimApproved(h.ctx))!;
    const writes = h.target.writes().length;
    const outcome = await executePlan(claim, executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crm: write }, h.clock.now));
    expect(outcome).toMatchObject({
      status: "stale",
      actions: [{ status: "stale", changedSincePreview: [{ path: "/email", from: "joana@old.example", to: "joana@sneaky.example" }] }],
    });
    expect(h.target.writes().length).toBe(writes);
    expect(await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome })).toEqual({ status: "stale" });
    expect(await h.database.db.$count(auditEvents, and(eq(auditEvents.planId, plan.id), eq(auditEvents.type, "plan.stale")))).toBe(1);
  });
});
