import { and, eq, inArray } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { decideBatch } from "../../../src/service/batch/decide-batch.ts";
import { openBatch } from "../../../src/service/batch/open-batch.ts";
import { batchFor } from "../../../src/service/batch/read-batch.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { createDelegation } from "../../../src/service/delegation/index.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { digestLinesOf } from "../../../src/service/review/digest.ts";
import { homeTabFor } from "../../../src/service/review/home-tab.ts";
import { listForBrowser } from "../../../src/service/review/review-plan.ts";
import { auditEvents, batches, decisions, plans } from "../../../src/store/schema.ts";
import { databaseKinds, postgresKind } from "../../support/databases.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";

/** Plans changing the same fields of different contacts: alike, as an agent sends them in a burst. */
async function alikePlans(h: HarnessView, n: number, fields: Record<string, string>, more: { onBehalfOf?: string; from?: number } = {}): Promise<PlanView[]> {
  const from = more.from ?? 1;
  const made: PlanView[] = [];
  for (let i = from; i < from + n; i++) {
    const path = `/${Object.keys(fields).join("-")}/${i}`;
    h.target.set(path, { id: i, email: `c${i}@old.example`, tier: "silver", phone: "0" });
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: {
        title: `Update contact ${i}`,
        actions: [{ kind: "http.json", target: "crm", path, op: "merge", body: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, `${v}${i}`])) }],
        onBehalfOf: more.onBehalfOf ?? "U0REQUESTER",
      },
    });
    made.push(plan);
    // A second apart, so "oldest first" is the order they were made in.
    h.clock.advance(1);
  }
  return made;
}

const statusesOf = async (h: HarnessView, ids: readonly string[]) =>
  Object.fromEntries(
    (
      await h.ctx.database.db
        .select({ id: plans.id, status: plans.status })
        .from(plans)
        .where(inArray(plans.id, [...ids]))
    ).map((r) => [r.id, r.status]),
  );

describe.each(databaseKinds)("a batch of alike plans on $name", (kind) => {
  /** Quorum 1, approvers U0ALICE, U0BOB, U0CAROL. */
  const h = useHarness(kind);

  it("12 alike plans, 2 stale meanwhile and 1 of the reviewer's own: 9 approved and applied once each, 3 refused with their reasons", async () => {
    const others = await alikePlans(h, 11, { email: "new" });
    const [own] = await alikePlans(h, 1, { email: "new" }, { onBehalfOf: "U0ALICE", from: 12 });
    const batch = await openBatch(h.ctx, { reviewer: { userId: "U0ALICE", via: "web" }, like: others[0]!.id });
    // What was offered: the reviewer's own request is never among the plans a batch is opened with.
    expect(batch.plans.map((p) => p.planId)).toEqual(others.map((p) => p.id));
    expect(batch.plans.map((p) => p.hash)).toEqual(others.map((p) => p.hash));
    expect(batch.more).toBe(0);
    expect(batch.alike).toBe("crm merge /email");
    expect(batch.plans[0]!.actions[0]!.changes).toEqual([{ path: "/email", from: "c1@old.example", to: "new1" }]);
    // A record says only what was shown: each plan in it is still decided by the one rule, so the
    // reviewer's own plan added to it is refused when the batch is decided.
    const [record] = await h.ctx.database.db.select().from(batches).where(eq(batches.id, batch.id));
    await h.ctx.database.db
      .update(batches)
      .set({ plans: [...record!.plans, { planId: own!.id, hash: own!.hash }] })
      .where(eq(batches.id, batch.id));
    // Two contacts change behind Countersign's back after the batch was shown.
    h.target.set("/email/4", { id: 4, email: "changed@elsewhere.example", tier: "silver", phone: "0" });
    h.target.set("/email/9", { id: 9, email: "changed@elsewhere.example", tier: "silver", phone: "0" });

    const decided = await decideBatch(h.ctx, { batchId: batch.id, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });

    const byTitle = Object.fromEntries(decided.outcomes.map((o) => [o.title, o.result]));
    expect(decided.outcomes).toHaveLength(12);
    expect(decided.outcomes.map((o) => o.planId)).toEqual([...others.map((p) => p.id), own!.id]);
    expect(byTitle["Update contact 4"]).toMatchObject({ kind: "refused", code: "target_changed" });
    expect(byTitle["Update contact 9"]).toMatchObject({ kind: "refused", code: "target_changed" });
    expect(byTitle["Update contact 12"]).toMatchObject({ kind: "refused", code: "self_approval" });
    const approved = others.filter((p) => !["Update contact 4", "Update contact 9"].includes(p.plan.title));
    expect(approved).toHaveLength(9);
    for (const p of approved) expect(byTitle[p.plan.title]).toEqual({ kind: "approved" });

    const statuses = await statusesOf(h, [...others.map((p) => p.id), own!.id]);
    expect(Object.values(statuses).sort()).toEqual([...Array(9).fill("approved"), "pending", "stale", "stale"]);
    // One decision and one approval event per approved plan, carrying the batch id; nothing recorded for the refused ones.
    for (const p of approved) {
      expect(await h.ctx.database.db.$count(decisions, eq(decisions.planId, p.id))).toBe(1);
      const events = await h.ctx.database.db
        .select({ data: auditEvents.data, actor: auditEvents.actor })
        .from(auditEvents)
        .where(and(eq(auditEvents.planId, p.id), eq(auditEvents.type, "decision.approve")));
      expect(events).toEqual([{ data: expect.objectContaining({ batchId: batch.id }), actor: expect.objectContaining({ userId: "U0ALICE", via: "web" }) }]);
    }
    expect(await h.ctx.database.db.$count(decisions, inArray(decisions.planId, [others[3]!.id, others[8]!.id, own!.id]))).toBe(0);

    // Each approved plan is applied once, by an executor holding the grant it was issued.
    const keys = await loadVerifyingKeys((await testGrantKeys()).publicPem);
    const ports = executionPorts(keys, { crm: targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) }, h.clock.now);
    for (;;) {
      const claim = await claimApproved(h.ctx);
      if (!claim) break;
      const outcome = await executePlan(claim, ports);
      await reportOutcome(h.ctx, { claimToken: claim.claimToken, outcome });
    }
    await ports.close();
    const written = h.target.writes().map((w) => w.path);
    expect(written.sort()).toEqual(approved.map((p) => p.plan.actions[0]!.path).sort());
    expect(
      Object.values(
        await statusesOf(
          h,
          approved.map((p) => p.id),
        ),
      ),
    ).toEqual(Array(9).fill("applied"));
    for (const p of approved) expect(h.target.get(p.plan.actions[0]!.path)).toMatchObject({ email: `new${p.plan.title.split(" ").at(-1)}` });
  });
});

describe.each(databaseKinds)("batches: who, until when, how, and which targets on $name", (kind) => {
  const h = useHarness(kind);
  const quorum2 = h.another({ defaults: { requiredApprovals: 2 } });
  /** Its one target keeps its plans out of batches. */
  const kept = h.another({ targets: (url) => ({ crm: targetConfig(url, { policy: { batch: false } }) }) });

  it("a batch decided on ten minutes after it was opened is refused as batch_expired, and decides nothing", async () => {
    const made = await alikePlans(h, 2, { tier: "gold" });
    const batch = await openBatch(h.ctx, { reviewer: { userId: "U0ALICE", via: "slack" }, like: made[1]!.id });
    expect(batch.plans.map((p) => p.planId)).toEqual(made.map((p) => p.id));
    expect(new Date(batch.expiresAt).getTime() - h.clock.now().getTime()).toBe(600_000);
    h.clock.advance(600);
    const err = await refusal(decideBatch(h.ctx, { batchId: batch.id, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" }));
    expect(err.code).toBe("batch_expired");
    expect(err.message).toMatch(/expired .*nothing was decided/);
    expect((await refusal(batchFor(h.ctx, { batchId: batch.id, userId: "U0ALICE" }))).code).toBe("batch_expired");
    expect(
      await h.ctx.database.db.$count(
        decisions,
        inArray(
          decisions.planId,
          made.map((p) => p.id),
        ),
      ),
    ).toBe(0);
    expect(
      Object.values(
        await statusesOf(
          h,
          made.map((p) => p.id),
        ),
      ),
    ).toEqual(["pending", "pending"]);
  });

  it("a delegate batches the plans of the person away, and each approval is recorded for them", async () => {
    const made = await alikePlans(h, 2, { email: "delegated", tier: "delegated" }, { from: 300 });
    await createDelegation(h.ctx, { delegator: "U0ALICE", delegate: "U0DAVE", until: "2026-12-20", by: { cli: "ana" } });
    const batch = await openBatch(h.ctx, { reviewer: { userId: "U0DAVE", via: "web" }, like: made[0]!.id });
    expect(batch.plans.map((p) => p.planId)).toEqual(made.map((p) => p.id));
    await decideBatch(h.ctx, { batchId: batch.id, actor: { userId: "U0DAVE", via: "web" }, verdict: "approve" });
    const rows = await h.ctx.database.db
      .select({ userId: decisions.userId, for: decisions.forUser })
      .from(decisions)
      .where(
        inArray(
          decisions.planId,
          made.map((p) => p.id),
        ),
      );
    expect(rows).toEqual([
      { userId: "U0DAVE", for: "U0ALICE" },
      { userId: "U0DAVE", for: "U0ALICE" },
    ]);
    expect(
      Object.values(
        await statusesOf(
          h,
          made.map((p) => p.id),
        ),
      ),
    ).toEqual(["approved", "approved"]);
  });

  it("a batch is its reviewer's: anyone else finds no such batch, and a rejection needs one reason", async () => {
    const made = await alikePlans(h, 2, { phone: "555" });
    const batch = await openBatch(h.ctx, { reviewer: { userId: "U0ALICE", via: "web" }, like: made[0]!.id });
    expect((await refusal(decideBatch(h.ctx, { batchId: batch.id, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" }))).code).toBe("not_found");
    expect((await refusal(batchFor(h.ctx, { batchId: batch.id, userId: "U0BOB" }))).code).toBe("not_found");
    expect((await refusal(decideBatch(h.ctx, { batchId: "not-a-batch", actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" }))).code).toBe(
      "not_found",
    );
    const noReason = await refusal(decideBatch(h.ctx, { batchId: batch.id, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "  " }));
    expect(noReason.code).toBe("invalid_request");
    expect(
      await h.ctx.database.db.$count(
        decisions,
        inArray(
          decisions.planId,
          made.map((p) => p.id),
        ),
      ),
    ).toBe(0);

    const rejected = await decideBatch(h.ctx, {
      batchId: batch.id,
      actor: { userId: "U0ALICE", via: "web" },
      verdict: "reject",
      reason: "wrong numbers",
    });
    expect(rejected.outcomes.map((o) => o.result)).toEqual([{ kind: "rejected" }, { kind: "rejected" }]);
    const events = await h.ctx.database.db
      .select({ data: auditEvents.data })
      .from(auditEvents)
      .where(
        and(
          inArray(
            auditEvents.planId,
            made.map((p) => p.id),
          ),
          eq(auditEvents.type, "plan.rejected"),
        ),
      );
    expect(events).toEqual(Array(2).fill({ data: { reason: "wrong numbers", batchId: batch.id } }));
    const rows = await h.ctx.database.db
      .select({ reason: plans.rejectReason })
      .from(plans)
      .where(
        inArray(
          plans.id,
          made.map((p) => p.id),
        ),
      );
    expect(rows.map((r) => r.reason)).toEqual(["wrong numbers", "wrong numbers"]);
    // Nothing alike waits for her now.
    expect((await refusal(openBatch(h.ctx, { reviewer: { userId: "U0ALICE", via: "web" }, like: made[0]!.id }))).code).toBe("not_found");
  });

  it("with a quorum of 2 an approval is counted (1 of 2); a second reviewer's batch approves; the oldest 50 are held and the rest counted", async () => {
    const made = await alikePlans(quorum2, 52, { email: "q" });
    const alice = await openBatch(quorum2.ctx, { reviewer: { userId: "U0ALICE", via: "web" }, like: made[10]!.id });
    expect(alice.plans.map((p) => p.planId)).toEqual(made.slice(0, 50).map((p) => p.id));
    expect(alice.more).toBe(2);
    const slack = await openBatch(quorum2.ctx, { reviewer: { userId: "U0ALICE", via: "slack" }, like: made[10]!.id, shown: 3 });
    expect(slack.plans).toHaveLength(3);
    expect(slack.more).toBe(49);

    const first = await decideBatch(quorum2.ctx, { batchId: slack.id, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });
    expect(first.outcomes.map((o) => o.result)).toEqual(Array(3).fill({ kind: "counted", approvals: 1, requiredApprovals: 2 }));
    // Twice through the same batch: one person counts once.
    const again = await decideBatch(quorum2.ctx, { batchId: slack.id, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });
    expect(again.outcomes.map((o) => o.result)).toEqual(Array(3).fill(expect.objectContaining({ kind: "refused", code: "already_voted" })));

    const bob = await openBatch(quorum2.ctx, { reviewer: { userId: "U0BOB", via: "web" }, like: made[0]!.id, shown: 3 });
    const second = await decideBatch(quorum2.ctx, { batchId: bob.id, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" });
    expect(second.outcomes.map((o) => o.result)).toEqual(Array(3).fill({ kind: "approved" }));
    expect(
      Object.values(
        await statusesOf(
          quorum2,
          made.slice(0, 3).map((p) => p.id),
        ),
      ),
    ).toEqual(Array(3).fill("approved"));
  });

  it("alike plans a reviewer may decide are offered on App Home and the browser list; a target with batch: false is never offered", async () => {
    const offered = await alikePlans(h, 3, { email: "offered" }, { from: 101 });
    const keptPlans = await alikePlans(kept, 3, { email: "kept" });
    expect(keptPlans[0]!.plan.policy.batch).toBe(false);
    expect(offered[0]!.plan.policy).not.toHaveProperty("batch");

    const home = await homeTabFor(h.ctx, { userId: "U0ALICE", shown: 31 });
    expect(home.alike).toContainEqual({ like: offered[0]!.id, count: 3, summary: "crm merge /email" });
    expect(home.alike.flatMap((o) => o.like)).not.toContain(keptPlans[0]!.id);
    const list = await listForBrowser(h.ctx, { reader: { userId: "U0ALICE" }, statuses: ["pending"] });
    expect(list.alike).toContainEqual({ like: offered[0]!.id, count: 3, summary: "crm merge /email" });
    // The requester is offered nothing: they may decide none of them.
    expect((await homeTabFor(h.ctx, { userId: "U0REQUESTER", shown: 31 })).alike).toEqual([]);

    const keptHome = await homeTabFor(kept.ctx, { userId: "U0ALICE", shown: 31 });
    expect(keptHome.alike.filter((o) => keptPlans.some((p) => p.id === o.like))).toEqual([]);
    const keptList = await listForBrowser(kept.ctx, { reader: { userId: "U0ALICE" }, statuses: ["pending"] });
    expect(keptList.alike?.filter((o) => keptPlans.some((p) => p.id === o.like))).toEqual([]);
    const lines = await digestLinesOf(
      kept.ctx,
      keptPlans.map((p) => p.id),
    );
    expect(lines.map((l) => l.likeness)).toEqual([undefined, undefined, undefined]);
    const err = await refusal(openBatch(kept.ctx, { reviewer: { userId: "U0ALICE", via: "web" }, like: keptPlans[0]!.id }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toMatch(/batch: false/);
  });
});

/** Races need real concurrent connections: PostgreSQL only (PGlite runs one query at a time). */
describe.skipIf(!postgresKind)("a batch raced by single-plan clicks on postgres", () => {
  const h = useHarness(postgresKind!);

  it("each plan is decided once: by the batch or by the click, never both", async () => {
    const made = await alikePlans(h, 8, { email: "race" });
    const batch = await openBatch(h.ctx, { reviewer: { userId: "U0ALICE", via: "slack" }, like: made[0]!.id });
    expect(batch.plans).toHaveLength(8);
    const [fromBatch, ...clicks] = await Promise.allSettled([
      decideBatch(h.ctx, { batchId: batch.id, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" }),
      // Bob clicks each plan on its own page, from the last to the first, while the batch runs.
      ...[...made].reverse().map((p) => decide(h.ctx, { planId: p.id, hash: p.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" })),
    ]);
    expect(fromBatch!.status).toBe("fulfilled");
    const outcomes = (fromBatch as PromiseFulfilledResult<Awaited<ReturnType<typeof decideBatch>>>).value.outcomes;
    const bobWon = clicks.filter((c) => c.status === "fulfilled").length;
    const batchWon = outcomes.filter((o) => o.result.kind === "approved").length;
    expect(batchWon + bobWon).toBe(8);
    for (const o of outcomes) if (o.result.kind !== "approved") expect(o.result).toMatchObject({ kind: "refused", code: "already_decided" });
    for (const c of clicks) if (c.status === "rejected") expect((c.reason as { code?: string }).code).toBe("already_decided");
    for (const p of made) {
      expect(await h.ctx.database.db.$count(decisions, eq(decisions.planId, p.id))).toBe(1);
      expect(await h.ctx.database.db.$count(auditEvents, and(eq(auditEvents.planId, p.id), eq(auditEvents.type, "plan.approved")))).toBe(1);
    }
    expect(
      Object.values(
        await statusesOf(
          h,
          made.map((p) => p.id),
        ),
      ),
    ).toEqual(Array(8).fill("approved"));
  });
});
