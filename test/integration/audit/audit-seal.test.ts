import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { appendAudit } from "../../../src/service/records/audit.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { sealAudit, type Seal } from "../../../src/service/audit/seal-audit.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import type { Tx } from "../../../src/store/db.ts";
import { useSealingPostgres } from "../../support/sealing-postgres.ts";
import { mergeRequest } from "../../support/harness.ts";
import { sealAll } from "../../support/seal-all.ts";
import { useHarness } from "../../support/use-harness.ts";

const APPROVERS = ["U0ALICE", "U0BOB", "U0CAROL"];

/** An event for a plan nobody else writes to: no row lock is needed to keep its chain straight. */
const event = (planId: string | null, type: string) => ({ planId, type, actor: { type: "system" as const, process: "test" }, data: {}, at: new Date() });

/** A transaction that has appended and stays open until released: ids and commits out of order. */
function openTransaction(database: { db: { transaction<T>(f: (tx: Tx) => Promise<T>): Promise<T> } }, write: (tx: Tx) => Promise<void>) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let written!: () => void;
  const ready = new Promise<void>((resolve) => (written = resolve));
  const done = database.db.transaction(async (tx) => {
    await write(tx);
    written();
    await released;
  });
  return {
    ready,
    commit: async () => {
      release();
      await done;
    },
  };
}

const sealingPostgres = useSealingPostgres();

/** Concurrency needs real concurrent connections: PostgreSQL only (PGlite runs one transaction at a time). */
describe.skipIf(!sealingPostgres)("audit chains and seals under concurrency on postgres", () => {
  const h = useHarness(sealingPostgres!, { defaults: { approvers: APPROVERS, requiredApprovals: 1 } });
  const h2 = h.another({ defaults: { approvers: APPROVERS, requiredApprovals: 2 } });

  it("many plans written in parallel, clicks racing on the same plans, and two sealers at once: no deadlock, every chain and seal verifies", async () => {
    const seals: Seal[] = [];
    let writing = true;
    /** A replica's sealing loop; both run at once, as on two replicas. */
    const sealer = async () => {
      while (writing) seals.push(...(await sealAudit(h.ctx)));
    };
    const sealers = [sealer(), sealer()];
    const onePlan = async (i: number) => {
      if (i % 2 === 0) {
        const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `parallel ${i}` }) });
        await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
        return;
      }
      // Two people and the agent's cancel at once, on one plan: its chain must not fork. An
      // Approve reads the target before its transaction, so it usually reaches the row
      // after the reject and the cancel, which read nothing; usually, not always: under load both
      // approvals can win, and two of two approvals end the plan before either of the others.
      const { plan } = await submitPlan(h2.ctx, { agent: h2.agent, request: mergeRequest({ title: `contended ${i}` }) });
      await Promise.allSettled([
        decide(h2.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" }),
        decide(h2.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" }),
        decide(h2.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "slack" }, verdict: "reject", reason: "race" }),
        cancelPlan(h2.ctx, { agent: h2.agent, planId: plan.id }),
      ]);
    };
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => onePlan(i)));
    writing = false;
    await Promise.all(sealers);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);

    await sealAll(h.ctx, seals);
    expect(seals.map((s) => s.seq)).toEqual(seals.map((_, i) => i + 1)); // one sealer at a time: no seq twice, none skipped
    const [{ n }] = (await h.database.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM audit_events`)) as [{ n: number | string }];
    const verdict = await verifyAudit(h.ctx);
    expect(verdict).toMatchObject({ ok: true, events: Number(n), sealed: Number(n), unsealed: 0, head: { seq: seals.at(-1)!.seq, hash: seals.at(-1)!.hash } });
    // Each contended plan ended exactly once, by whichever of the four reached its row lock in time.
    const ends = await h.database.rows<{ title: string; n: number | string }>(sql`
      SELECT p.document::json->>'title' AS title, count(e.id) AS n FROM plans p
      LEFT JOIN audit_events e ON e.plan_id = p.id AND e.type IN ('plan.approved', 'plan.rejected', 'plan.cancelled')
      WHERE p.document::json->>'title' LIKE 'contended %' GROUP BY 1`);
    expect(ends).toHaveLength(20);
    expect(ends.filter((e) => Number(e.n) !== 1)).toEqual([]);
  });

  it("a seal stops below the oldest open transaction: an event that commits late is sealed later, never skipped", async () => {
    await sealAll(h.ctx);
    const early = openTransaction(h.database, (tx) => appendAudit(tx, event(randomUUID(), "test.early")));
    await early.ready;
    await h.database.db.transaction((tx) => appendAudit(tx, event(randomUUID(), "test.late")));

    // "late" committed with a larger xid than "early", which is still open: neither is final yet.
    expect(await sealAudit(h.ctx)).toEqual([]);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, unsealed: 1 });

    await early.commit();
    const seals = await sealAll(h.ctx);
    expect(seals.reduce((n, s) => n + s.events, 0)).toBe(2);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, unsealed: 0, head: { seq: seals.at(-1)!.seq } });
  });

  it("the list's version changes when an event with a smaller id commits after a larger one", async () => {
    const early = openTransaction(h.database, (tx) => appendAudit(tx, event(randomUUID(), "test.early")));
    await early.ready;
    await h.database.db.transaction((tx) => appendAudit(tx, event(randomUUID(), "test.late")));
    const [ids] = await h.database.rows<{ early: number | string | null; late: number | string }>(sql`
      SELECT (SELECT max(id) FROM audit_events WHERE type = 'test.early') AS early, (SELECT max(id) FROM audit_events WHERE type = 'test.late') AS late`);
    const before = await h.ctx.signals.version();

    await early.commit();
    const [after] = await h.database.rows<{ early: number | string }>(sql`SELECT max(id) AS early FROM audit_events WHERE type = 'test.early'`);
    expect(Number(after!.early)).toBeLessThan(Number(ids!.late)); // the case max(id) missed
    expect(await h.ctx.signals.version()).not.toBe(before);
    // And across a seal, it keeps counting the same events.
    const sealedBefore = await h.ctx.signals.version();
    await sealAudit(h.ctx);
    expect(await h.ctx.signals.version()).toBe(sealedBefore);
  });
});
