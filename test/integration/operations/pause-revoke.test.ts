import { and, asc, eq, isNull } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/plan/outcome.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { expireDue } from "../../../src/service/watch/expire-due.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { heartbeatClaim } from "../../../src/service/execution/heartbeat-claim.ts";
import { pauseCountersign, readPause, resumeCountersign } from "../../../src/service/operations/pause.ts";
import { PauseWatch } from "../../../src/service/operations/pause-watch.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { revokePlan } from "../../../src/service/decide/revoke-plan.ts";
import { MAX_STATED_REASON_CHARS } from "../../../src/service/access/stated-reason.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { auditEvents, outbox, pause, plans } from "../../../src/store/schema.ts";
import { databaseKinds, postgresKind } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";
import { waitFor } from "../../support/wait-for.ts";

const ADMIN = "U0ADMIN";
const cli = { via: "cli", name: "ops-oncall" } as const;

/** The kill switch and revoke at the service door, as the server and CLI call them. */
describe.each(databaseKinds)("pause and revoke on $name", (kind) => {
  const h = useHarness(kind);
  let seq = 0;
  const asAdmins = (ctx: ServiceContext, admins: string[]): ServiceContext => ({ ...ctx, config: { ...ctx.config, admins } });
  const applied: Outcome = { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] };
  const rowOf = async (planId: string) => (await h.database.db.select().from(plans).where(eq(plans.id, planId)))[0]!;

  async function approvedPlan(): Promise<{ id: string; hash: string }> {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `pause/revoke plan ${++seq}` }) });
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");
    return plan;
  }

  it("while paused no plan is claimed and no lapsed lease is taken over; an executing plan heartbeats and reports; agents submit and people decide; resume releases", async () => {
    const running = await approvedPlan();
    const claim = (await claimApproved(h.ctx))!;
    expect(claim.plan.id).toBe(running.id);

    const paused = await pauseCountersign(h.ctx, { operator: cli, reason: "incident 42: CRM is misbehaving" });
    expect(paused).toMatchObject({ by: "ops-oncall", via: "cli", reason: "incident 42: CRM is misbehaving", since: h.clock.now().toISOString() });
    expect(await readPause(h.database.db)).toEqual(paused);

    const waiting = await approvedPlan(); // submit and decide still work
    expect(await claimApproved(h.ctx)).toBeUndefined();
    expect(await getPlan(h.ctx, { agent: h.agent, planId: waiting.id })).toMatchObject({
      status: "approved",
      held: { by: "pause", reason: paused.reason, since: paused.since },
    });
    expect((await getPlan(h.ctx, { agent: h.agent, planId: running.id })).held).toBeUndefined(); // executing: not held

    await heartbeatClaim(h.ctx, { claimToken: claim.claimToken });
    h.clock.advance(61); // the running plan's lease lapses: a takeover would be a new claim, and is refused too
    expect(await claimApproved(h.ctx)).toBeUndefined();
    expect(
      await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: { ...applied, actions: [{ ...applied.actions[0]!, detail: running.id }] } }),
    ).toEqual({ status: "applied" });

    const resumed = await resumeCountersign(h.ctx, { operator: cli });
    expect(resumed.was).toEqual(paused);
    expect(await readPause(h.database.db)).toBeUndefined();
    const after = await claimApproved(h.ctx);
    expect(after?.plan.id).toBe(waiting.id);
    await reportOutcome(h.ctx, { claimToken: after!.claimToken, outcome: applied });

    const system = await h.database.db
      .select({ type: auditEvents.type, actor: auditEvents.actor, data: auditEvents.data })
      .from(auditEvents)
      .where(and(isNull(auditEvents.planId)))
      .orderBy(asc(auditEvents.id));
    expect(system.filter((e) => e.type.startsWith("countersign.")).slice(-2)).toEqual([
      { type: "countersign.paused", actor: { type: "system", process: "cli" }, data: { by: "ops-oncall", via: "cli", reason: paused.reason } },
      {
        type: "countersign.resumed",
        actor: { type: "system", process: "cli" },
        data: { by: "ops-oncall", via: "cli", pausedSince: paused.since, pausedBy: "ops-oncall" },
      },
    ]);
  });

  it("a grant keeps running while paused: an approved plan that waits past it expires as it always does", async () => {
    await pauseCountersign(h.ctx, { operator: cli, reason: "long freeze" });
    try {
      const plan = await approvedPlan();
      h.clock.advance(600); // testConfig's grantTtl
      await expireDue(h.ctx);
      expect((await rowOf(plan.id)).status).toBe("expired");
      expect(await claimApproved(h.ctx)).toBeUndefined();
    } finally {
      await resumeCountersign(h.ctx, { operator: cli });
    }
  });

  it("pausing twice, resuming when running, an empty reason and a browser user who is not an admin are refused, naming why", async () => {
    expect((await refusal(pauseCountersign(h.ctx, { operator: cli, reason: "  " }))).message).toMatch(/a reason is required/);
    const notAdmin = await refusal(pauseCountersign(asAdmins(h.ctx, [ADMIN]), { operator: { via: "web", userId: "U0ALICE" }, reason: "x" }));
    expect(notAdmin.code).toBe("not_an_admin");
    expect(notAdmin.message).toMatch(/only admins .*`admins`/);
    expect((await refusal(resumeCountersign(h.ctx, { operator: cli }))).message).toBe("Countersign is not paused; there is nothing to resume");

    await pauseCountersign(asAdmins(h.ctx, [ADMIN]), { operator: { via: "web", userId: ADMIN }, reason: "first" });
    const twice = await refusal(pauseCountersign(h.ctx, { operator: cli, reason: "second" }));
    expect(twice.code).toBe("conflict");
    expect(twice.message).toMatch(/already paused .*by U0ADMIN: first/);
    expect((await refusal(resumeCountersign(asAdmins(h.ctx, [ADMIN]), { operator: { via: "web", userId: "U0BOB" } }))).code).toBe("not_an_admin");
    await resumeCountersign(asAdmins(h.ctx, [ADMIN]), { operator: { via: "web", userId: ADMIN } });
  });

  it("who may act is asked before the reason is: a non-admin's or a stranger's oversized reason is refused for who they are", async () => {
    const huge = "x".repeat(MAX_STATED_REASON_CHARS * 50);
    expect((await refusal(pauseCountersign(asAdmins(h.ctx, [ADMIN]), { operator: { via: "web", userId: "U0ALICE" }, reason: huge }))).code).toBe(
      "not_an_admin",
    );
    const approved = await approvedPlan();
    expect((await refusal(revokePlan(h.ctx, { planId: approved.id, person: { userId: "U0MALLORY", via: "web" }, reason: huge }))).code).toBe("not_a_revoker");
    const tooLong = await refusal(revokePlan(h.ctx, { planId: approved.id, person: { userId: "U0BOB", via: "web" }, reason: huge }));
    expect(tooLong.message).toBe(`the reason is ${MAX_STATED_REASON_CHARS * 50} characters; at most ${MAX_STATED_REASON_CHARS} are allowed`);
    expect((await rowOf(approved.id)).status).toBe("approved");
    // Leaves nothing claimable behind for the tests after this one.
    await revokePlan(h.ctx, { planId: approved.id, person: { userId: "U0BOB", via: "web" }, reason: "done checking" });
  });

  it("another replica's watch hears a pause and a resume by NOTIFY, and finds one it was not told of at its periodic re-read", async () => {
    // Told: a watch whose re-read is an hour away can only learn of it by NOTIFY.
    const told = new PauseWatch(h.database, 3_600_000);
    // Not told: a pause written without NOTIFY (as if the notification were lost) reaches a watch by its re-read alone.
    const backstop = new PauseWatch(h.database, 200);
    await told.start();
    await backstop.start();
    try {
      expect(told.current()).toBeUndefined();
      const paused = await pauseCountersign(h.ctx, { operator: cli, reason: "watch me" });
      await waitFor("the watch to hear of the pause", () => told.current()?.reason === "watch me");
      expect(told.current()).toEqual(paused);
      await resumeCountersign(h.ctx, { operator: cli });
      await waitFor("the watch to hear of the resume", () => told.current() === undefined);

      await told.stop(); // no longer listening
      await h.database.db.insert(pause).values({ reason: "silent", pausedBy: "psql", via: "cli", since: h.clock.now() });
      await waitFor("the re-read to find the silent pause", () => backstop.current()?.reason === "silent");
      await h.database.db.delete(pause);
      await waitFor("the re-read to find it gone", () => backstop.current() === undefined);
    } finally {
      await told.stop();
      await backstop.stop();
    }
  });

  it("the pause is announced once per review channel through the outbox (none configured: no rows)", async () => {
    const slackCtx: ServiceContext = {
      ...h.ctx,
      config: { ...h.ctx.config, slack: { ...h.ctx.config.slack, enabled: true, reviewChannel: "C0REVIEW" } as ServiceContext["config"]["slack"] },
    };
    const before = await h.database.db.$count(outbox, eq(outbox.kind, "slack_notice"));
    await pauseCountersign(h.ctx, { operator: cli, reason: "no channel" }); // the harness names no review channel
    await resumeCountersign(h.ctx, { operator: cli });
    expect(await h.database.db.$count(outbox, eq(outbox.kind, "slack_notice"))).toBe(before);
    await pauseCountersign(slackCtx, { operator: cli, reason: "announce" });
    await resumeCountersign(slackCtx, { operator: cli });
    const rows = await h.database.db
      .select({ lane: outbox.lane, payload: outbox.payload })
      .from(outbox)
      .where(eq(outbox.kind, "slack_notice"))
      .orderBy(asc(outbox.id));
    expect(rows.length - before).toBe(2);
    expect(rows.slice(-2).map((r) => [r.lane, (r.payload as { type: string }).type])).toEqual([
      ["slack_notice:C0REVIEW", "countersign.paused"],
      ["slack_notice:C0REVIEW", "countersign.resumed"],
    ]);
  });

  it("an approver or an admin revokes an approved plan with a reason: final, the claim never returns it, the agent reads who and why", async () => {
    const byApprover = await approvedPlan();
    expect(await revokePlan(h.ctx, { planId: byApprover.id, person: { userId: "U0BOB", via: "slack" }, reason: "  wrong customer  " })).toEqual({
      status: "revoked",
      reason: "wrong customer",
    });
    const byAdmin = await approvedPlan();
    await revokePlan(asAdmins(h.ctx, [ADMIN]), { planId: byAdmin.id, person: { userId: ADMIN, via: "web" }, reason: "freeze" });
    expect(await claimApproved(h.ctx)).toBeUndefined();

    const view = await getPlan(h.ctx, { agent: h.agent, planId: byApprover.id });
    expect(view).toMatchObject({ status: "revoked", revocation: { userId: "U0BOB", via: "slack", reason: "wrong customer" } });
    expect(view.held).toBeUndefined();
    expect((await rowOf(byAdmin.id)).status).toBe("revoked");
    const [event] = await h.database.db
      .select({ actor: auditEvents.actor, data: auditEvents.data })
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, byAdmin.id), eq(auditEvents.type, "plan.revoked")));
    expect(event).toEqual({ actor: { type: "user", userId: ADMIN, via: "web" }, data: { reason: "freeze" } });
  });

  it("revoke refusals: not approved yet, claimed, final, the requester, a stranger, no reason", async () => {
    const say = async (planId: string, userId: string, reason: string | undefined = "because") =>
      refusal(revokePlan(h.ctx, { planId, person: { userId, via: "web" }, reason }));
    const { plan: pending } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `pending ${++seq}` }) });
    expect(await say(pending.id, "U0BOB")).toMatchObject({ code: "not_revocable", details: { status: "pending" } });
    await decide(h.ctx, { planId: pending.id, hash: pending.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "no" });
    expect((await say(pending.id, "U0BOB")).message).toBe("this plan cannot be revoked: it is already rejected, which is final; nothing was changed");

    const approved = await approvedPlan();
    expect((await say(approved.id, "U0BOB", " ")).code).toBe("invalid_request");
    const requester = await say(approved.id, "U0REQUESTER");
    expect(requester.code).toBe("not_a_revoker");
    expect((await say(approved.id, "U0MALLORY")).message).toMatch(/only those who may decide it \(U0ALICE, U0BOB, U0CAROL, not its requester\) and admins may/);
    const claim = (await claimApproved(h.ctx))!;
    const claimed = await say(approved.id, "U0BOB");
    expect(claimed).toMatchObject({ code: "not_revocable", details: { status: "executing" } });
    expect(claimed.message).toBe("this plan cannot be revoked: an executor has already taken it; nothing was changed");
    await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome: applied });
    expect((await say(approved.id, "U0BOB")).message).toMatch(/already applied, which is final/);
    expect((await say("00000000-0000-4000-8000-000000000000", "U0BOB")).code).toBe("not_found");
  });
});

/** A revoke and a claim on one plan at the same moment, on separate connections: exactly one wins. */
describe.skipIf(!postgresKind)("revoke racing a claim on postgres", () => {
  const h = useHarness(postgresKind!);
  const rounds = 12;

  async function approvedPlan(h: HarnessView, n: number) {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `race ${n}` }) });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    return plan;
  }

  it(`${rounds} rounds: either the executor holds the plan and the revoke is refused as claimed, or it is revoked and the claim finds nothing`, async () => {
    const winners = { claim: 0, revoke: 0 };
    for (let n = 0; n < rounds; n++) {
      const plan = await approvedPlan(h, n);
      // Alternate who starts first, so both orders are raced.
      const revoke = () => revokePlan(h.ctx, { planId: plan.id, person: { userId: "U0BOB", via: "slack" }, reason: "race" });
      const claiming = n % 2 === 0 ? claimApproved(h.ctx) : undefined;
      const revoking = revoke();
      const [claimed, revoked] = await Promise.allSettled([claiming ?? claimApproved(h.ctx), revoking] as const);
      expect(claimed.status).toBe("fulfilled");
      const claim = claimed.status === "fulfilled" ? claimed.value : undefined;
      const [row] = await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, plan.id));
      if (claim) {
        winners.claim++;
        expect(claim.plan.id).toBe(plan.id);
        expect(row!.status).toBe("executing");
        expect(revoked.status).toBe("rejected");
        expect(((revoked as PromiseRejectedResult).reason as ServiceError).code).toBe("not_revocable");
        await reportOutcome(h.ctx, {
          claimToken: claim.claimToken,
          outcome: { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] },
        });
      } else {
        winners.revoke++;
        expect(revoked.status).toBe("fulfilled");
        expect(row!.status).toBe("revoked");
      }
      const events = await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, plan.id));
      expect(events.filter((e) => e.type === "plan.executing" || e.type === "plan.revoked")).toHaveLength(1);
    }
    expect(winners.claim + winners.revoke).toBe(rounds);
    console.log(`revoke racing a claim, ${rounds} rounds: the claim won ${winners.claim}, the revoke ${winners.revoke}`);
  });
});
