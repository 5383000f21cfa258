import { WebClient } from "@slack/web-api";
import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyGrant } from "../../../src/grant/grant.ts";
import { decide, type DecideInput } from "../../../src/service/decide/decide.ts";
import { revokePlan } from "../../../src/service/decide/revoke-plan.ts";
import { remindDue } from "../../../src/service/watch/remind-due.ts";
import { createDelegation, endDelegation, listDelegations, type DelegationView } from "../../../src/service/delegation/index.ts";
import { editPlan } from "../../../src/service/edit/index.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { slackProfiles } from "../../../src/slack/profiles.ts";
import { auditEvents, decisions, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig, testGrantKeys } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";

/** Who is who, from the emulator's users.info over HTTP, as the Slack door asks it. */
const profilesOf = (emulator: SlackEmulator) => slackProfiles(new WebClient(emulator.botToken, { slackApiUrl: emulator.url, retryConfig: { retries: 0 } }));

/** Slack's users.info for the profile checks: a bot, a deactivated person, and time zones. */
let slack: SlackEmulator;
beforeAll(async () => {
  slack = new SlackEmulator({
    users: {
      U0ALICE: { tz: "America/New_York" },
      U0BOB: { tz: "Europe/Lisbon" },
      U0HELPER: { is_bot: true, name: "helper-bot" },
      U0GONE: { deleted: true },
    },
  });
  await slack.start();
});
afterAll(async () => {
  await slack?.stop();
});

describe.each(databaseKinds)("delegating while away on $name", (kind) => {
  /** Approvers U0ALICE, U0BOB, U0CAROL; quorum 2; target "vault" lets no delegate act. */
  const h = useHarness(kind, {
    defaults: { requiredApprovals: 2 },
    targets: (url) => ({ crm: targetConfig(url), other: targetConfig(url), vault: targetConfig(url, { policy: { delegation: false } }) }),
  });
  /** A clock of its own, to move past the end of a delegation's day. */
  const clockHarness = h.another({ defaults: { requiredApprovals: 2 } });
  /** Reminders 10 minutes before expiry. */
  const reminding = h.another({ defaults: { requiredApprovals: 1, reminders: [600] } });
  let seq = 0;
  /** Each test its own delegator, so one test's delegations never reach another's plans. */
  const delegator = () => `U0AWAY${++seq}`;

  async function newPlan(overrides: Record<string, unknown> = {}, harness: HarnessView = h): Promise<PlanView> {
    const { plan } = await submitPlan(harness.ctx, { agent: harness.agent, request: mergeRequest({ title: `delegation plan ${++seq}`, ...overrides }) });
    return plan;
  }
  const approve = (plan: PlanView, userId: string, extra: Partial<DecideInput> = {}): DecideInput => ({
    planId: plan.id,
    hash: plan.hash,
    actor: { userId, via: "slack" },
    verdict: "approve",
    ...extra,
  });
  const delegate = (from: string, to: string, extra: Record<string, unknown> = {}): Promise<DelegationView> =>
    createDelegation(h.ctx, { delegator: from, delegate: to, until: "2026-12-20", by: { cli: "ana" }, ...extra });
  /** Plans whose approvers are these people, quorum 2. */
  const withApprovers = (approvers: string[], harness: HarnessView = h): ServiceContext => ({
    ...harness.ctx,
    config: { ...harness.ctx.config, defaults: { ...harness.ctx.config.defaults, approvers } },
  });
  const planFor = async (approvers: string[], overrides: Record<string, unknown> = {}) => {
    const { plan } = await submitPlan(withApprovers(approvers), { agent: h.agent, request: mergeRequest({ title: `delegation plan ${++seq}`, ...overrides }) });
    return plan;
  };
  const votes = (planId: string) =>
    h.database.db
      .select({ userId: decisions.userId, for: decisions.forUser, verdict: decisions.verdict })
      .from(decisions)
      .where(eq(decisions.planId, planId))
      .orderBy(asc(decisions.id));
  const statusOf = async (planId: string) => (await h.database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, planId)))[0]!.status;

  describe("quorum: each person who clicked counts once, and each person acted for counts once", () => {
    it("approvers {Alice, Bob, Carol}, quorum 2: Bob as himself, then Bob for Alice, leaves the plan pending", async () => {
      const alice = delegator();
      const plan = await planFor([alice, "U0BOB", "U0CAROL"]);
      await delegate(alice, "U0BOB");

      const first = await decide(h.ctx, approve(plan, "U0BOB"));
      expect(first).toMatchObject({ status: "pending", approvals: ["U0BOB"], requiredApprovals: 2 });
      expect(first.for).toBeUndefined();

      const again = await refusal(decide(h.ctx, approve(plan, "U0BOB", { for: alice })));
      expect(again.code).toBe("already_voted");
      expect(await statusOf(plan.id)).toBe("pending");
      expect(await votes(plan.id)).toEqual([{ userId: "U0BOB", for: null, verdict: "approve" }]);

      // Another person completes the quorum.
      expect((await decide(h.ctx, approve(plan, "U0CAROL"))).status).toBe("approved");
    });

    it("Bob for Alice, then Alice herself or another of her delegates, counts Alice once; Carol completes it, and the grant says who acted for whom", async () => {
      const alice = delegator();
      const plan = await planFor([alice, "U0BOB", "U0CAROL"]);
      await delegate(alice, "U0BOB");
      await delegate(alice, "U0DAVE");

      const first = await decide(h.ctx, approve(plan, "U0BOB", { for: alice }));
      expect(first).toMatchObject({ status: "pending", approvals: ["U0BOB"], for: alice });

      const herself = await refusal(decide(h.ctx, approve(plan, alice)));
      expect(herself.code).toBe("already_voted");
      expect(herself.details).toMatchObject({ counted: alice });
      const dave = await refusal(decide(h.ctx, approve(plan, "U0DAVE")));
      expect(dave.code).toBe("already_voted");
      expect(dave.message).toContain(alice);
      expect(await statusOf(plan.id)).toBe("pending");

      const done = await decide(h.ctx, approve(plan, "U0CAROL"));
      expect(done.status).toBe("approved");
      expect(await votes(plan.id)).toEqual([
        { userId: "U0BOB", for: alice, verdict: "approve" },
        { userId: "U0CAROL", for: null, verdict: "approve" },
      ]);

      const [row] = await h.database.db.select({ grant: plans.grant }).from(plans).where(eq(plans.id, plan.id));
      const check = await verifyGrant((await testGrantKeys()).verifying, row!.grant!, "test", h.clock.now());
      expect(check.ok && check.claims.approvers.map((a) => ({ user: a.user, for: a.for }))).toEqual([
        { user: "U0BOB", for: alice },
        { user: "U0CAROL", for: undefined },
      ]);
      const view = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
      expect(view.approvals.map((a) => [a.userId, a.for])).toEqual([
        ["U0BOB", alice],
        ["U0CAROL", undefined],
      ]);
      const events = await h.database.db
        .select({ type: auditEvents.type, actor: auditEvents.actor, data: auditEvents.data })
        .from(auditEvents)
        .where(and(eq(auditEvents.planId, plan.id)))
        .orderBy(asc(auditEvents.id));
      expect(events.find((e) => e.type === "decision.approve")?.actor).toEqual({ type: "user", userId: "U0BOB", via: "slack", for: alice });
      expect(events.find((e) => e.type === "plan.approved")?.data).toMatchObject({ approvers: ["U0BOB", "U0CAROL"], actedFor: { U0BOB: alice } });
    });

    it("a delegate who is no approver acts for the delegator without naming them; their second click counts for nobody", async () => {
      const alice = delegator();
      const carol = delegator();
      const plan = await planFor([alice, carol, "U0BOB"]);
      await delegate(alice, "U0DAVE");
      await delegate(carol, "U0DAVE");
      const first = await decide(h.ctx, approve(plan, "U0DAVE"));
      expect(first.status).toBe("pending");
      expect([alice, carol]).toContain(first.for);
      // Dave counts once, whoever else he could act for.
      expect((await refusal(decide(h.ctx, approve(plan, "U0DAVE")))).code).toBe("already_voted");
      expect((await refusal(decide(h.ctx, approve(plan, "U0DAVE", { for: first.for === alice ? carol : alice })))).code).toBe("already_voted");
      expect(await statusOf(plan.id)).toBe("pending");
    });
  });

  describe("requesters", () => {
    it("a request on behalf of the delegator is refused to the delegate acting for them, as self_approval", async () => {
      const alice = delegator();
      const plan = await planFor([alice, "U0BOB", "U0CAROL"], { onBehalfOf: alice });
      await delegate(alice, "U0DAVE");
      await delegate(alice, "U0BOB");
      const dave = await refusal(decide(h.ctx, approve(plan, "U0DAVE")));
      expect(dave.code).toBe("self_approval");
      expect(dave.message).toContain(alice);
      expect((await refusal(decide(h.ctx, approve(plan, "U0BOB", { for: alice })))).code).toBe("self_approval");
      expect((await refusal(decide(h.ctx, { ...approve(plan, "U0DAVE"), verdict: "reject", reason: "no" }))).code).toBe("self_approval");
      expect(await votes(plan.id)).toEqual([]);
      // Bob is an approver in his own right: as himself he may.
      expect((await decide(h.ctx, approve(plan, "U0BOB"))).for).toBeUndefined();
    });
  });

  describe("a delegation that ended", () => {
    it("ended early between the click's lookup and its transaction: refused as delegation_ended, nothing recorded", async () => {
      const alice = delegator();
      const ctx = withApprovers(["S0LEADS", "U0CAROL"]);
      const { plan } = await submitPlan(ctx, { agent: h.agent, request: mergeRequest({ title: `delegation plan ${++seq}` }) });
      const given = await delegate(alice, "U0DAVE");
      // Alice is an approver through her group: the click asks Slack about the clicker first, then
      // about each delegator it found, before its transaction; the delegation is ended right then.
      let asked = 0;
      const racing: ServiceContext = {
        ...ctx,
        directory: {
          async membersOf() {
            if (++asked === 2) await endDelegation(h.ctx, { id: given.id, by: { userId: alice, via: "web" } });
            return [alice];
          },
        },
      };
      const err = await refusal(decide(racing, approve(plan, "U0DAVE")));
      expect(err.code).toBe("delegation_ended");
      expect(err.details).toMatchObject({ delegator: alice });
      expect(asked).toBeGreaterThanOrEqual(2);
      expect(await votes(plan.id)).toEqual([]);
      // Ended, it is not found at all for the next click: Dave is no approver.
      expect((await refusal(decide(racing, approve(plan, "U0DAVE")))).code).toBe("not_an_approver");
    });

    it("its last day over: the delegate is no approver any more", async () => {
      const alice = delegator();
      const ctx = withApprovers([alice, "U0CAROL"], clockHarness);
      const { plan } = await submitPlan(ctx, { agent: clockHarness.agent, request: mergeRequest({ title: `delegation plan ${++seq}`, ttlSeconds: 86_400 }) });
      await createDelegation(clockHarness.ctx, { delegator: alice, delegate: "U0DAVE", until: "2026-12-02", by: { cli: "ana" } });
      clockHarness.clock.advance(12 * 3600 - 1);
      expect(await decide(ctx, approve(plan, "U0DAVE"))).toMatchObject({ status: "pending", for: alice });
      clockHarness.clock.advance(1); // 2026-12-03T00:00Z: the end of Alice's day (UTC, without Slack to ask)
      expect((await refusal(decide(ctx, { ...approve(plan, "U0DAVE"), verdict: "reject", reason: "too late" }))).code).toBe("not_an_approver");
    });
  });

  describe("targets", () => {
    it("a delegation for some targets reaches only plans on them; a target with delegation: false lets no delegate act", async () => {
      const alice = delegator();
      await delegate(alice, "U0DAVE", { targets: ["crm"] });
      const onCrm = await planFor([alice, "U0CAROL"]);
      const onOther = await planFor([alice, "U0CAROL"], {
        actions: [{ kind: "http.json", target: "other", path: "/contacts/2", op: "merge", body: { email: "b@new.example" } }],
      });
      const onVault = await planFor([alice, "U0CAROL"], {
        actions: [{ kind: "http.json", target: "vault", path: "/contacts/2", op: "merge", body: { email: "b@new.example" } }],
      });
      expect(onVault.plan.policy.delegation).toBe(false);
      expect((await refusal(decide(h.ctx, approve(onOther, "U0DAVE")))).code).toBe("not_an_approver");
      expect((await refusal(decide(h.ctx, approve(onVault, "U0DAVE")))).code).toBe("not_an_approver");
      expect((await decide(h.ctx, approve(onCrm, "U0DAVE"))).for).toBe(alice);

      const everywhere = delegator();
      await delegate(everywhere, "U0DAVE");
      const vaultToo = await planFor([everywhere, "U0CAROL"], {
        actions: [{ kind: "http.json", target: "vault", path: "/contacts/2", op: "merge", body: { email: "c@new.example" } }],
      });
      expect((await refusal(decide(h.ctx, approve(vaultToo, "U0DAVE")))).code).toBe("not_an_approver");
      const err = await refusal(delegate(everywhere, "U0DAVE", { targets: ["vault"] }));
      expect(err.message).toMatch(/target vault lets nobody act for its approvers/);
    });
  });

  it("the delegate revokes where the delegator may, and the revocation says for whom", async () => {
    const alice = delegator();
    const ctx = withApprovers([alice, "U0CAROL"]);
    const { plan } = await submitPlan(
      { ...ctx, config: { ...ctx.config, defaults: { ...ctx.config.defaults, requiredApprovals: 1 } } },
      { agent: h.agent, request: mergeRequest({ title: `delegation plan ${++seq}` }) },
    );
    await decide(h.ctx, approve(plan, "U0CAROL"));
    expect((await refusal(revokePlan(h.ctx, { planId: plan.id, person: { userId: "U0DAVE", via: "web" }, reason: "not now" }))).code).toBe("not_a_revoker");
    await delegate(alice, "U0DAVE");
    await revokePlan(h.ctx, { planId: plan.id, person: { userId: "U0DAVE", via: "web" }, reason: "Alice asked to hold it" });
    const view = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
    expect(view.revocation).toMatchObject({ userId: "U0DAVE", for: alice, reason: "Alice asked to hold it" });
  });

  it("the delegate edits where the delegator may decide; the edited version is theirs to leave to others", async () => {
    const alice = delegator();
    const plan = await planFor([alice, "U0BOB", "U0CAROL"]);
    const edit = () =>
      editPlan(h.ctx, { planId: plan.id, hash: plan.hash, person: { userId: "U0DAVE", via: "web" }, values: { "0:/email": '"dave@new.example"' } });
    expect((await refusal(edit())).code).toBe("not_an_approver");
    await delegate(alice, "U0DAVE");
    const { plan: edited } = await edit();
    expect(edited.plan).toMatchObject({ supersedes: plan.id, editedBy: { userId: "U0DAVE", via: "web" } });
    expect((await refusal(decide(h.ctx, approve(edited, "U0DAVE")))).code).toBe("self_approval");
  });

  it("a reminder reaches the delegate in place of the approver away, saying for whom", async () => {
    const alice = delegator();
    const ctx = withApprovers([alice, "U0CAROL"], reminding);
    const { plan } = await submitPlan(ctx, { agent: reminding.agent, request: mergeRequest({ title: `delegation plan ${++seq}`, ttlSeconds: 900 }) });
    await createDelegation(reminding.ctx, { delegator: alice, delegate: "U0DAVE", until: "2026-12-20", by: { cli: "ana" } });
    reminding.clock.advance(300);
    expect(await remindDue(reminding.ctx)).toBeGreaterThanOrEqual(1);
    const [reminder] = await h.database.db
      .select({ data: auditEvents.data })
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, plan.id), eq(auditEvents.type, "plan.reminder")));
    expect(reminder?.data).toMatchObject({ missing: ["U0DAVE", "U0CAROL"], delegated: [{ userId: "U0DAVE", for: alice }] });
  });

  describe("making, listing and ending one", () => {
    it("lasts to the end of its day in the delegator's Slack time zone, and is listed while in force", async () => {
      const ctx = { ...h.ctx, profiles: profilesOf(slack) };
      const made = await createDelegation(ctx, { delegator: "U0ALICE", delegate: "U0BOB", until: "2026-12-20", by: { userId: "U0ALICE", via: "slack" } });
      expect(made).toMatchObject({
        delegator: "U0ALICE",
        delegate: "U0BOB",
        until: "2026-12-21T05:00:00.000Z",
        timeZone: "America/New_York",
        targets: null,
        active: true,
      });
      expect((await listDelegations(h.ctx, { person: "U0BOB" })).map((d) => d.id)).toContain(made.id);
      const ended = await endDelegation(h.ctx, { id: made.id, by: { userId: "U0BOB", via: "web" } });
      expect(ended).toMatchObject({ active: false, endedBy: "U0BOB" });
      expect((await listDelegations(h.ctx, { person: "U0BOB" })).map((d) => d.id)).not.toContain(made.id);
      expect((await listDelegations(h.ctx, { ended: true })).map((d) => d.id)).toContain(made.id);
      expect((await refusal(endDelegation(h.ctx, { id: made.id, by: { cli: "ana" } }))).code).toBe("conflict");
      expect((await refusal(endDelegation(h.ctx, { id: made.id, by: { userId: "U0MALLORY", via: "web" } }))).code).toBe("not_an_admin");
      const types = await h.database.db
        .select({ type: auditEvents.type, data: auditEvents.data })
        .from(auditEvents)
        .where(eq(auditEvents.type, "delegation.ended"));
      expect(types.some((e) => (e.data as { id?: string }).id === made.id)).toBe(true);
    });

    it.each<[name: string, input: { delegator?: string; delegate: string; until: string }, path: string, says: RegExp]>([
      ["to oneself", { delegate: "U0ALICE", until: "2026-12-20" }, "/delegate", /cannot delegate to yourself \(U0ALICE\)/],
      ["to a bot", { delegate: "U0HELPER", until: "2026-12-20" }, "/delegate", /U0HELPER is a bot: only a person can decide in your place/],
      ["to someone deactivated", { delegate: "U0GONE", until: "2026-12-20" }, "/delegate", /U0GONE is deactivated/],
      ["to something that is no user id", { delegate: "bob", until: "2026-12-20" }, "/delegate", /"bob" is not a Slack user id/],
      ["ending in the past", { delegate: "U0BOB", until: "2026-12-01" }, "/until", /2026-12-01 has passed \(today is 2026-12-02 in America\/New_York\)/],
      [
        "more than 90 days ahead",
        { delegate: "U0BOB", until: "2027-03-03" },
        "/until",
        /more than 90 days ahead: the latest a delegation made today may end is 2027-03-02/,
      ],
      ["on no date", { delegate: "U0BOB", until: "next friday" }, "/until", /"next friday" is not a date: give the last day as YYYY-MM-DD/],
    ])("refuses delegating %s, naming why", async (_name, input, path, says) => {
      const ctx = { ...h.ctx, profiles: profilesOf(slack) };
      const before = await listDelegations(h.ctx, { ended: true });
      const err = await refusal(createDelegation(ctx, { delegator: input.delegator ?? "U0ALICE", ...input, by: { userId: "U0ALICE", via: "slack" } }));
      expect(err.code).toBe("invalid_request");
      expect(err.message).toMatch(/^nothing was delegated: /);
      expect(err.message).toMatch(says);
      expect(err.issues?.[0]?.path).toBe(path);
      expect(await listDelegations(h.ctx, { ended: true })).toHaveLength(before.length);
    });

    it("a person delegates only their own approvals", async () => {
      const err = await refusal(
        createDelegation(h.ctx, { delegator: "U0ALICE", delegate: "U0BOB", until: "2026-12-20", by: { userId: "U0MALLORY", via: "web" } }),
      );
      expect(err.code).toBe("not_an_admin");
    });
  });
});
