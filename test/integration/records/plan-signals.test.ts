import type { Claim } from "../../../src/contract/executor-api.ts";
import { afterEach, describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/plan/outcome.ts";
import { claimApproved, claimApprovedWaiting } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { parseAnnouncement } from "../../../src/service/records/plan-signals.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { waitFor } from "../../support/wait-for.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** Far longer than any test here runs: a wait that ends did so because it was woken. */
const LONG_MS = 600_000;

/**
 * Who a plan change wakes: waiters on that plan and on any plan always, executors waiting for
 * work only when a plan became approved, and then one of them per approval.
 */
describe.each(databaseKinds)("plan signals on $name", (kind) => {
  const h = useHarness(kind, { defaults: { requiredApprovals: 2 } });
  const stop = new AbortController();
  let cleanup: AbortController[] = [];
  afterEach(() => {
    for (const c of cleanup) c.abort();
    cleanup = [];
  });

  /** Executors waiting for work; `woken` counts those a signal or a handed claim (not a timeout or abort) ended, `handed` the claims. */
  function claimers(n: number, kids?: string[]): { woken: () => number; handed: Claim[] } {
    let woken = 0;
    const handed: Claim[] = [];
    for (let i = 0; i < n; i++) {
      const aborted = new AbortController();
      cleanup.push(aborted);
      void h.ctx.signals.waitClaimable(LONG_MS, aborted.signal, kids).then((claim) => {
        if (!aborted.signal.aborted) woken++;
        if (claim) handed.push(claim);
      });
    }
    return { woken: () => woken, handed };
  }

  /** Runs `change` and resolves once this process has heard its announcement (and handled it in full). */
  async function heard(planId: string | undefined, change: () => Promise<unknown>): Promise<void> {
    const aborted = new AbortController();
    cleanup.push(aborted);
    const wait = planId ? h.ctx.signals.wait(planId, LONG_MS, aborted.signal) : h.ctx.signals.waitAny(LONG_MS, aborted.signal);
    await change();
    await wait;
    // Every waiter the same announcement woke has been resolved in the same callback; let their
    // continuations run before counting.
    await new Promise((r) => setImmediate(r));
  }

  const applied: Outcome = { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] };

  it("a submit, a vote short of the quorum and an outcome wake no executor; the approval hands its plan to one of three", async () => {
    const executors = claimers(3);
    let planId = "";
    let hash = "";
    await heard(undefined, async () => {
      ({
        plan: { id: planId, hash },
      } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "signals" }) }));
    });
    expect(executors.woken()).toBe(0);

    await heard(planId, () => decide(h.ctx, { planId, hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" }));
    expect(executors.woken()).toBe(0);

    // The approval claims its plan for the longest waiting executor, and only it.
    await heard(planId, async () => {
      expect((await decide(h.ctx, { planId, hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" })).status).toBe("executing");
    });
    expect(executors.woken()).toBe(1);
    const [claim] = executors.handed;
    expect(claim?.plan.id).toBe(planId);
    expect(await claimApproved(h.ctx)).toBeUndefined();
    await heard(planId, () => reportOutcome(h.ctx, { claimToken: claim!.claimToken, outcome: applied }));
    expect(executors.woken()).toBe(1);
  });

  it("an approval no executor waiting here can take is announced, and its NOTIFY wakes one of three", async () => {
    // Executors holding only another key: the approval cannot claim for them, so it announces
    // itself as every approval heard from another replica does.
    const executors = claimers(3, ["another-key"]);
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "announced approval" }) });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" })).status).toBe("approved");
    // The vote's and the approval's announcements may arrive apart: wait for the wake itself.
    await waitFor("the approval's NOTIFY to wake an executor", () => executors.woken() > 0);
    expect(executors.handed).toEqual([]);
    const claim = await claimApproved(h.ctx);
    expect(claim?.plan.id).toBe(plan.id);
    await heard(plan.id, () => reportOutcome(h.ctx, { claimToken: claim!.claimToken, outcome: applied }));
    // Only the longest waiting one, and the outcome wakes none.
    expect(executors.woken()).toBe(1);
  });

  it("an executor waiting for work gets the plan approved while it waits", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "claimed while waiting" }) });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    const waiting = claimApprovedWaiting(h.ctx, { waitMs: LONG_MS, signal: stop.signal });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0CAROL", via: "slack" }, verdict: "approve" });
    const claim = await waiting;
    expect(claim?.plan.id).toBe(plan.id);
    await reportOutcome(h.ctx, { claimToken: claim!.claimToken, outcome: applied });
  });
});

describe("an announcement's payload", () => {
  it("names the plan and whether it became claimable; a bare id from an older replica wakes executors too", () => {
    expect(parseAnnouncement("p1 approved")).toEqual({ planId: "p1", claimable: true });
    expect(parseAnnouncement("p1 pending")).toEqual({ planId: "p1", claimable: false });
    expect(parseAnnouncement("p1 executing")).toEqual({ planId: "p1", claimable: false });
    expect(parseAnnouncement("p1")).toEqual({ planId: "p1", claimable: true });
  });
});
