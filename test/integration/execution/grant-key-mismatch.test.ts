import { asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { generateGrantKeys } from "../../../src/grant/keys.ts";
import { claimApproved, claimApprovedWaiting } from "../../../src/service/execution/claim-approved.ts";
import { executorPolling, PRESENT_MS } from "../../../src/service/execution/executors-seen.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { auditEvents, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * A claim names the key ids its executor can verify, and is handed only plans whose grant one of
 * them signed: a plan the executors asking cannot verify stays approved, shown held, until one
 * that can claims it or its grant expires. It never turns `failed` for a key mismatch.
 */
describe.each(databaseKinds)("claims by grant key on $name", (kind) => {
  const h = useHarness(kind);
  let seq = 0;
  const otherKid = async () => (await generateGrantKeys()).kid;
  const rowOf = async (planId: string) => (await h.database.db.select().from(plans).where(eq(plans.id, planId)))[0]!;
  const eventTypes = async (planId: string) =>
    (await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map(
      (e) => e.type,
    );
  const submitted = async () => (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `grant key plan ${++seq}` }) })).plan;
  const approve = async (plan: { id: string; hash: string }) =>
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");
  const view = (planId: string) => getPlan(h.ctx, { agent: h.agent, planId });
  /** Lets the executors this replica saw drop out of sight, so each test starts with none. */
  const forgetExecutors = () => h.clock.advance(PRESENT_MS / 1000 + 1);

  it("a plan approved while only a mismatched executor waits is not handed to it: approved, held for the key, until a matching claim takes it", async () => {
    forgetExecutors();
    const wrong = await otherKid();
    const plan = await submitted();
    const stop = new AbortController();
    const waiting = claimApprovedWaiting(h.ctx, { waitMs: 60_000, signal: stop.signal, kids: [wrong] });
    // It cannot verify what this replica signs, so it is never queued for an approval's hand-off.
    expect(h.ctx.signals.claimersWaiting).toBe(0);
    await approve(plan);
    expect((await rowOf(plan.id)).status).toBe("approved");

    const held = (await view(plan.id)).held;
    expect(held).toMatchObject({ by: "grant_key_mismatch", grantKid: h.ctx.grantKey.kid, executorKids: [wrong] });
    expect(held?.reason).toContain(`\`${h.ctx.grantKey.kid}\``);
    expect(held?.reason).toContain(`\`${wrong}\``);
    expect(held?.reason).toContain("COUNTERSIGN_GRANT_PUBLIC_KEY");
    expect(Date.parse(held!.since)).toBeLessThanOrEqual(h.clock.now().getTime());

    stop.abort();
    expect(await waiting).toBeUndefined();
    expect(await claimApproved(h.ctx, { kids: [wrong] })).toBeUndefined();
    expect((await rowOf(plan.id)).status).toBe("approved");

    const claim = await claimApproved(h.ctx, { kids: [wrong, h.ctx.grantKey.kid] });
    expect(claim?.plan.id).toBe(plan.id);
    expect((await view(plan.id)).held).toBeUndefined();
    await reportOutcome(h.ctx, { claimToken: claim!.claimToken, outcome: { status: "applied", actions: [] } });
    expect(await eventTypes(plan.id)).toEqual(["plan.submitted", "decision.approve", "plan.approved", "plan.executing", "plan.applied"]);
  });

  it("held for the key until the grant expires, and then expired as any unclaimed approval, never failed", async () => {
    forgetExecutors();
    const wrong = await otherKid();
    const plan = await submitted();
    await approve(plan);
    expect(await claimApprovedWaiting(h.ctx, { waitMs: 0, kids: [wrong] })).toBeUndefined();
    expect((await view(plan.id)).held?.by).toBe("grant_key_mismatch");
    h.clock.advance(plan.plan.policy.grantTtlSeconds);
    expect(await claimApproved(h.ctx, { kids: [h.ctx.grantKey.kid] })).toBeUndefined(); // a matching executor is too late: the grant ran out
    expect(await expireDue(h.ctx)).toContain(plan.id);
    expect((await rowOf(plan.id)).status).toBe("expired");
    expect(await eventTypes(plan.id)).not.toContain("plan.failed");
  });

  it("no key hold while an executor that can verify the grant is asking too; with no executor asking lately, held for the lack of one", async () => {
    forgetExecutors();
    const plan = await submitted();
    await approve(plan);
    expect((await view(plan.id)).held?.by).toBe("no_executor"); // nobody asked lately: nothing is known about keys
    const wrong = executorPolling(h.ctx, [await otherKid()]);
    expect((await view(plan.id)).held?.by).toBe("grant_key_mismatch");
    const right = executorPolling(h.ctx, [h.ctx.grantKey.kid]);
    expect((await view(plan.id)).held).toBeUndefined();
    right();
    wrong();
    forgetExecutors();
    expect((await view(plan.id)).held?.by).toBe("no_executor");
    // An executor that names no key (an older version) is handed any plan, and holds nothing.
    const claim = await claimApproved(h.ctx, { kids: [] });
    expect(claim?.plan.id).toBe(plan.id);
    await reportOutcome(h.ctx, { claimToken: claim!.claimToken, outcome: { status: "applied", actions: [] } });
  });

  it("a lease that ran out is taken over only by an executor that can verify the grant", async () => {
    forgetExecutors();
    const wrong = await otherKid();
    const plan = await submitted();
    await approve(plan);
    const first = await claimApproved(h.ctx, { kids: [h.ctx.grantKey.kid] });
    expect(first?.plan.id).toBe(plan.id);
    h.clock.advance(h.ctx.config.executor.leaseSeconds);
    expect(await claimApproved(h.ctx, { kids: [wrong] })).toBeUndefined();
    const second = await claimApproved(h.ctx, { kids: [h.ctx.grantKey.kid] });
    expect(second?.plan.id).toBe(plan.id);
    await reportOutcome(h.ctx, { claimToken: second!.claimToken, outcome: { status: "applied", actions: [] } });
  });
});
