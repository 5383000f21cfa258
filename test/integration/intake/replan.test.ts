import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { STALE_REPLACED_EVENT } from "../../../src/service/intake/supersede.ts";
import { transition } from "../../../src/service/lifecycle/transition.ts";
import { auditEvents, outbox, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";

const ONE_APPROVER = { approvers: ["U0ALICE"], requiredApprovals: 1 };
let seq = 0;

async function submit(h: HarnessView, overrides: Record<string, unknown> = {}): Promise<PlanView> {
  const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `replan ${++seq}`, ...overrides }) });
  return plan;
}
const replan = (h: HarnessView, old: PlanView, email: string, more: Record<string, unknown> = {}) =>
  submit(h, { supersedes: old.id, actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email } }], ...more });
const approve = (h: HarnessView, plan: PlanView) =>
  decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
const makeStale = (h: HarnessView, plan: PlanView) =>
  h.ctx.database.db.transaction((tx) => transition(h.ctx, tx, { planId: plan.id, transition: "drift", actor: { type: "system", process: "watcher" } }));

describe.each(databaseKinds)("re-plan (supersedes) on $name", (kind) => {
  const h = useHarness(kind, { defaults: ONE_APPROVER, sinks: ["slack", "webhook"] });
  const other = h.another({ defaults: ONE_APPROVER });
  const atLimit = h.another({ defaults: ONE_APPROVER });
  const db = () => h.database.db;
  const row = async (id: string) => (await db().select().from(plans).where(eq(plans.id, id)))[0]!;
  const eventsOf = (id: string, type: string) =>
    db()
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, id), eq(auditEvents.type, type)));

  it("a pending plan becomes superseded in the same transaction that stores the new version, audited, with its Slack update and webhook queued", async () => {
    const old = await submit(h, { callbackUrl: "http://127.0.0.1:9/cb" });
    const next = await replan(h, old, "ana@v2.example");

    expect(next.status).toBe("pending");
    expect(next.plan.supersedes).toBe(old.id); // in the hashed document: approvers sign "this instead of that"
    expect(fingerprint(next.plan)).toBe(next.hash);
    expect(next.supersedes).toEqual({ id: old.id, hash: old.hash, reviewUrl: old.reviewUrl });

    const was = await getPlan(h.ctx, { agent: h.agent, planId: old.id });
    expect(was.status).toBe("superseded");
    expect(was.supersededBy).toEqual({ id: next.id, hash: next.hash, reviewUrl: next.reviewUrl });
    const [event] = await eventsOf(old.id, "plan.superseded");
    expect(event!.data).toEqual({ supersededBy: next.id, hash: next.hash });
    expect(event!.actor).toEqual({ type: "agent", agentId: h.agent.id, name: h.agent.name });
    const queued = await db().select({ kind: outbox.kind }).from(outbox).where(eq(outbox.planId, old.id));
    expect(queued.map((q) => q.kind).sort()).toEqual(["slack", "slack", "webhook", "webhook"]); // submitted + superseded, each sink
  });

  it("approvals never carry over: an approved, unclaimed plan is superseded and the new version starts with none", async () => {
    const old = await submit(h);
    expect((await approve(h, old)).status).toBe("approved");
    const next = await replan(h, old, "ana@v3.example");
    expect(next.approvals).toEqual([]);
    expect(next.status).toBe("pending");
    expect((await row(old.id)).status).toBe("superseded");
    // Nothing is left for an executor: the superseded approval is not claimable.
    expect(await claimApproved(h.ctx)).toBeUndefined();
  });

  it("a stale plan stays stale (final stays final) and gains supersededBy; no webhook for it", async () => {
    const old = await submit(h, { callbackUrl: "http://127.0.0.1:9/cb" });
    await makeStale(h, old);
    const next = await replan(h, old, "ana@v4.example");
    const was = await row(old.id);
    expect(was.status).toBe("stale");
    expect(was.supersededBy).toBe(next.id);
    expect(await eventsOf(old.id, STALE_REPLACED_EVENT)).toHaveLength(1);
    const kinds = await db().select({ kind: outbox.kind, payload: outbox.payload }).from(outbox).where(eq(outbox.planId, old.id));
    expect(
      kinds
        .filter((k) => (k.payload as { type: string }).type === STALE_REPLACED_EVENT)
        .map((k) => k.kind)
        .sort(),
    ).toEqual(["slack", "webhook"]);
  });

  it("a chain of three versions: each links to its neighbours", async () => {
    const v1 = await submit(h);
    const v2 = await replan(h, v1, "ana@chain2.example");
    const v3 = await replan(h, v2, "ana@chain3.example");
    const [r1, r2, r3] = await Promise.all([row(v1.id), row(v2.id), row(v3.id)]);
    expect([r1.status, r2.status, r3.status]).toEqual(["superseded", "superseded", "pending"]);
    expect([r1.supersededBy, r2.supersedes, r2.supersededBy, r3.supersedes]).toEqual([v2.id, v1.id, v3.id, v2.id]);
  });

  it("refuses what cannot be replaced, names why, and stores nothing", async () => {
    const count = () => db().$count(plans);

    const theirs = await submit(other);
    const notMine = await refusal(replan(h, theirs, "x@x.example"));
    expect(notMine.code).toBe("not_found"); // another agent's plan is no plan at all
    expect(notMine.issues).toEqual([{ path: "/supersedes", message: "no plan of yours has this id" }]);

    const cancelled = await submit(h);
    await cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id });
    const final = await refusal(replan(h, cancelled, "x@x.example"));
    expect(final.code).toBe("not_supersedable");
    expect(final.message).toContain("is cancelled, which is final");
    expect(final.details).toMatchObject({ status: "cancelled" });

    const claimed = await submit(h);
    await approve(h, claimed);
    expect((await claimApproved(h.ctx))?.plan.id).toBe(claimed.id);
    const busy = await refusal(replan(h, claimed, "x@x.example"));
    expect(busy.code).toBe("not_supersedable");
    expect(busy.message).toContain("already claimed by an executor");

    const v1 = await submit(h);
    await replan(h, v1, "first@x.example");
    const twice = await refusal(replan(h, v1, "second@x.example"));
    expect(twice.code).toBe("not_supersedable");
    expect(twice.message).toContain("already superseded by");

    const before = await count();
    await refusal(replan(h, cancelled, "x@x.example"));
    expect(await count()).toBe(before);

    const bad = await refusal(submit(h, { supersedes: "not-a-uuid" }));
    expect(bad.code).toBe("invalid_request");
  });

  it("an idempotent retry returns the same new version and supersedes nothing twice", async () => {
    const old = await submit(h);
    const request = mergeRequest({
      title: "retried re-plan",
      supersedes: old.id,
      idempotencyKey: `retry-${old.id}`,
      actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@retry.example" } }],
    });
    const first = (await submitPlan(h.ctx, { agent: h.agent, request })).plan;
    const again = await submitPlan(h.ctx, { agent: h.agent, request });
    expect(again.created).toBe(false);
    expect(again.plan.id).toBe(first.id);
    expect(await eventsOf(old.id, "plan.superseded")).toHaveLength(1);
  });

  it("an agent at limits.maxPending can still re-plan an open version (it leaves in the same transaction), but not add a plan", async () => {
    const limited: HarnessView = {
      agent: atLimit.agent,
      clock: atLimit.clock,
      target: atLimit.target,
      ctx: { ...atLimit.ctx, config: { ...atLimit.ctx.config, limits: { plansPerMinute: 60, maxPending: 1, agents: {} } } },
    };
    const v1 = await submit(limited);
    const v2 = await replan(limited, v1, "ana@limited.example");
    expect(v2.status).toBe("pending");
    const more = await refusal(submit(limited));
    expect(more.code).toBe("rate_limited");
    expect(more.message).toContain("limits.maxPending is 1");
    // A stale version is not open: replacing it counts like any new plan.
    await makeStale(limited, v2);
    const v3 = await replan(limited, v2, "ana@limited3.example");
    expect(v3.status).toBe("pending");
    expect((await refusal(submit(limited))).code).toBe("rate_limited");
  });

  // Races need real concurrent connections: PostgreSQL only (PGlite runs one transaction at a time).
  const onPostgres = kind.name === "postgres";
  const statusOf = async (id: string) => (await row(id)).status;
  const codeOf = (r: PromiseSettledResult<unknown>) =>
    r.status === "rejected" ? (r.reason instanceof ServiceError ? r.reason.code : String(r.reason)) : "won";

  it.skipIf(!onPostgres)("eight re-plans of one version at once: exactly one wins, the others store nothing", async () => {
    const old = await submit(h);
    const before = await h.database.db.$count(plans);
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => replan(h, old, `racer${i}@x.example`)));
    expect(results.map(codeOf).sort()).toEqual([
      "not_supersedable",
      "not_supersedable",
      "not_supersedable",
      "not_supersedable",
      "not_supersedable",
      "not_supersedable",
      "not_supersedable",
      "won",
    ]);
    expect(await h.database.db.$count(plans)).toBe(before + 1);
    const winner = results.find((r): r is PromiseFulfilledResult<PlanView> => r.status === "fulfilled")!.value;
    expect((await h.database.db.select().from(plans).where(eq(plans.id, old.id)))[0]!.supersededBy).toBe(winner.id);
  });

  it.skipIf(!onPostgres)("a re-plan racing a claim: the plan ends superseded or claimed, never both", async () => {
    for (let round = 0; round < 5; round++) {
      const old = await submit(h);
      await approve(h, old);
      const [claim, replanned] = await Promise.allSettled([claimApproved(h.ctx), replan(h, old, `claimrace${round}@x.example`)]);
      const claimed = claim.status === "fulfilled" && claim.value?.plan.id === old.id;
      const superseded = replanned.status === "fulfilled";
      expect(claimed !== superseded, `round ${round}: claimed ${claimed}, superseded ${superseded}`).toBe(true);
      expect(await statusOf(old.id)).toBe(superseded ? "superseded" : "executing");
      if (!superseded) expect(codeOf(replanned)).toBe("not_supersedable");
    }
  });
});
