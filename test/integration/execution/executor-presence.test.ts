import { asc, eq, sql } from "drizzle-orm";
import { beforeEach, describe, expect, it } from "vitest";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { claimApprovedWaiting } from "../../../src/service/execution/claim-approved.ts";
import { heartbeatClaim } from "../../../src/service/execution/heartbeat-claim.ts";
import { announceMissingExecutors } from "../../../src/service/execution/missing-executors.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { readMetrics } from "../../../src/service/operations/metrics.ts";
import { pauseCountersign, resumeCountersign } from "../../../src/service/operations/pause.ts";
import { reviewPlan } from "../../../src/service/review/review-plan.ts";
import { auditEvents, outbox } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";
import { waitFor } from "../../support/wait-for.ts";

const MISSING_AFTER_SECONDS = 10;
const REVIEW = "C0REVIEW";

/**
 * Whether any executor is connected is kept in the database (executor_presence), so every replica
 * answers alike: an approved plan none is applying says so (`held: no_executor`), the gauge
 * counts them, and the review channels and each plan's thread are told once.
 */
describe.each(databaseKinds)("executors missing on $name", (kind) => {
  const h = useHarness(kind, { sinks: ["slack"] });
  /** The harness's context with a short missingAfterSeconds, expecting an executor, and Slack on. */
  const ctx = (): ServiceContext => ({
    ...h.ctx,
    config: {
      ...h.ctx.config,
      executor: { leaseSeconds: 60, missingAfterSeconds: MISSING_AFTER_SECONDS, expected: true },
      slack: { enabled: true, botToken: "xoxb-test", signingSecret: "s", appToken: undefined, apiUrl: undefined, reviewChannel: REVIEW },
    },
  });
  let seq = 0;
  const approved = async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `presence plan ${++seq}` }) });
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");
    return plan;
  };
  const held = async (planId: string) => (await getPlan(ctx(), { agent: h.agent, planId })).held;
  /** An executor seen through a heartbeat of a claim it does not hold: refused, but it asked. */
  const seen = async (executor: string) => expect((await refusal(heartbeatClaim(ctx(), { claimToken: "not-a-claim", executor }))).code).toBe("lease_lost");
  const connected = async () => (await readMetrics(ctx())).executorsConnected;
  const events = async (type: string) =>
    (await h.database.db.select().from(auditEvents).where(eq(auditEvents.type, type)).orderBy(asc(auditEvents.id))).map((e) => ({
      planId: e.planId,
      data: e.data as Record<string, unknown>,
    }));
  const notices = async () =>
    (await h.database.db.select().from(outbox).where(eq(outbox.kind, "slack_notice")).orderBy(asc(outbox.id))).map((r) => r.payload as Record<string, unknown>);
  const threadRows = async (planId: string) =>
    (await h.database.db.select().from(outbox).where(eq(outbox.planId, planId)).orderBy(asc(outbox.id))).map((r) => ({
      kind: r.kind,
      type: (r.payload as { type: string }).type,
    }));
  /** A replica's watch that started long enough ago to tell. */
  const announce = (c: ServiceContext = ctx()) => announceMissingExecutors(c, { watchingSince: h.clock.now().getTime() - MISSING_AFTER_SECONDS * 1000 });
  const forget = () => h.clock.advance(MISSING_AFTER_SECONDS + 1);

  beforeEach(async () => {
    // Each test starts with no executor ever seen, and nothing approved left waiting.
    forget();
    await h.database.db.execute(sql`DELETE FROM executor_presence`);
    await h.database.db.execute(sql`UPDATE plans SET status = 'revoked' WHERE status = 'approved'`);
  });

  it("an approved plan with no executor is held no_executor from its approval; one executor seen and it is not; after missingAfterSeconds it is again, since then", async () => {
    expect(await connected()).toBe(0);
    const plan = await approved();
    const approvedAt = h.clock.now().toISOString();
    expect(await held(plan.id)).toMatchObject({ by: "no_executor", since: approvedAt, lastSeenAt: null });
    expect((await held(plan.id))?.reason).toContain("none has asked this server for work yet");
    // The browser's view of the plan says the same.
    expect((await reviewPlan(ctx(), { planId: plan.id, reader: { userId: "U0ALICE" } })).plan.held).toMatchObject({ by: "no_executor" });

    h.clock.advance(5);
    await seen("executor-a");
    const seenAt = h.clock.now().toISOString();
    expect(await held(plan.id)).toBeUndefined();
    expect(await connected()).toBe(1);

    h.clock.advance(MISSING_AFTER_SECONDS - 1);
    expect(await held(plan.id)).toBeUndefined(); // within missingAfterSeconds
    h.clock.advance(2);
    expect(await held(plan.id)).toMatchObject({ by: "no_executor", since: seenAt, lastSeenAt: seenAt });
    expect((await held(plan.id))?.reason).toContain(`since ${seenAt}`);
    expect(await connected()).toBe(0);
  });

  it("counts executors by the id they send; one without an id counts once; a claim waiting keeps its executor connected however long it waits", async () => {
    await seen("executor-a");
    await seen("executor-b");
    expect((await refusal(heartbeatClaim(ctx(), { claimToken: "not-a-claim" }))).code).toBe("lease_lost");
    expect((await refusal(heartbeatClaim(ctx(), { claimToken: "not-a-claim" }))).code).toBe("lease_lost");
    expect(await connected()).toBe(3);

    forget();
    expect(await connected()).toBe(0);
    const stop = new AbortController();
    const waiting = claimApprovedWaiting(ctx(), { waitMs: 120_000, signal: stop.signal, executor: "executor-long-poll" });
    try {
      await waitFor("the waiting executor to be seen", async () => (await connected()) === 1);
      // Time passes while it waits: each turn of its wait (a second apart) writes it again.
      h.clock.advance(MISSING_AFTER_SECONDS * 3);
      await waitFor("the waiting executor to be seen again", async () => (await connected()) === 1);
    } finally {
      stop.abort();
      expect(await waiting).toBeUndefined();
    }
  });

  it("writes an executor's last-seen time at most once per quarter of missingAfterSeconds", async () => {
    const lastSeen = async () =>
      (await h.database.rows<{ at: string }>(sql`SELECT last_seen_at::text AS at FROM executor_presence WHERE executor = 'executor-w'`))[0]?.at;
    await seen("executor-w");
    const first = await lastSeen();
    h.clock.advance(1);
    await seen("executor-w");
    expect(await lastSeen()).toBe(first);
    h.clock.advance(MISSING_AFTER_SECONDS / 4);
    await seen("executor-w");
    expect(await lastSeen()).not.toBe(first);
  });

  it("tells the review channels once per outage and each approved plan's thread once; a second outage is told again; not while paused, nor with expected: false, nor on a replica just started", async () => {
    const before = (await notices()).length;
    const missingBefore = (await events("executors.missing")).length;
    const plan = await approved();

    // A replica that has just started gives executors time to come back.
    expect(await announceMissingExecutors(ctx(), { watchingSince: h.clock.now().getTime() })).toEqual({ outage: false, plans: 0 });
    expect(await announce({ ...ctx(), config: { ...ctx().config, executor: { leaseSeconds: 60, expected: false } } })).toEqual({ outage: false, plans: 0 });

    expect(await announce()).toEqual({ outage: true, plans: 1 });
    expect(await announce()).toEqual({ outage: false, plans: 0 });
    const first = (await notices()).slice(before);
    expect(first).toEqual([
      { type: "executors.missing", channel: REVIEW, lastSeenAt: null, missingAfterSeconds: MISSING_AFTER_SECONDS, at: h.clock.now().toISOString() },
    ]);
    expect((await events("executors.missing")).slice(missingBefore)).toEqual([
      { planId: null, data: { lastSeenAt: null, missingAfterSeconds: MISSING_AFTER_SECONDS } },
    ]);
    // The plan's thread hears of it; the agent's webhook and the Home do not (not a status change).
    expect((await threadRows(plan.id)).filter((r) => r.type === "plan.no_executor")).toEqual([{ kind: "slack", type: "plan.no_executor" }]);

    // An executor comes and goes: a second outage is told again; the plan was told already.
    await seen("executor-a");
    const seenAt = h.clock.now().toISOString();
    expect(await announce()).toEqual({ outage: false, plans: 0 });
    forget();
    expect(await announce()).toEqual({ outage: true, plans: 0 });
    expect(await announce()).toEqual({ outage: false, plans: 0 });
    expect((await notices()).slice(before).map((n) => n.lastSeenAt)).toEqual([null, seenAt]);

    // While paused, the pause is why plans wait: nothing is told.
    await pauseCountersign(ctx(), { operator: { via: "cli", name: "oncall" }, reason: "maintenance" });
    try {
      const during = await approved();
      expect(await announce()).toEqual({ outage: false, plans: 0 });
      expect((await getPlan(ctx(), { agent: h.agent, planId: during.id })).held?.by).toBe("pause");
      await resumeCountersign(ctx(), { operator: { via: "cli", name: "oncall" } });
      expect(await announce()).toEqual({ outage: false, plans: 1 });
    } finally {
      await resumeCountersign(ctx(), { operator: { via: "cli", name: "oncall" } }).catch(() => undefined);
    }
    expect((await notices()).slice(before).filter((n) => n.type === "executors.missing")).toHaveLength(2);
    expect(await events("plan.no_executor")).toHaveLength(await countTold());
  });

  const countTold = async () =>
    (await h.database.rows<{ n: number }>(sql`SELECT count(DISTINCT plan_id)::int AS n FROM audit_events WHERE type = 'plan.no_executor'`))[0]!.n;
});
