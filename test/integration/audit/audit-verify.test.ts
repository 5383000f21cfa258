import { sql, type SQL } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendAudit } from "../../../src/service/records/audit.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { sealAudit } from "../../../src/service/audit/seal-audit.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import type { Database } from "../../../src/store/db.ts";
import { pglite } from "../../support/databases.ts";
import { mergeRequest, openHarness, type Harness } from "../../support/harness.ts";
import { sealAll } from "../../support/seal-all.ts";
import { useSealingPostgres } from "../../support/sealing-postgres.ts";

const sealingPostgres = useSealingPostgres();
const databaseKinds = sealingPostgres ? [pglite, sealingPostgres] : [pglite];

interface Row {
  id: number;
  planId: string | null;
  type: string;
}

/** Scenario 34: an edited, deleted or reordered audit event, or a changed seal, is found and named. */
describe.each(databaseKinds)("audit verify on $name", (kind) => {
  let database: Database;
  let h: Harness;
  let plans: string[];
  /** Every event, in id order. */
  let events: Row[];
  const ofPlan = (planId: string) => events.filter((e) => e.planId === planId);

  beforeEach(async () => {
    database = await kind.open();
    h = await openHarness(database);
    plans = [];
    for (let i = 0; i < 3; i++) {
      const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `audited ${i}` }) });
      await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
      plans.push(plan.id);
    }
    events = (
      await database.rows<{ id: number | string; plan_id: string | null; type: string }>(sql`SELECT id, plan_id, type FROM audit_events ORDER BY id`)
    ).map((r) => ({ id: Number(r.id), planId: r.plan_id, type: r.type }));
  });
  afterEach(async () => {
    await h?.close();
    await database?.close();
  });

  /** The database refuses edits to the log; a table owner who switches the guards off is what verify catches. */
  async function tamper(statement: SQL): Promise<void> {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`);
      await tx.execute(sql`ALTER TABLE audit_seals DISABLE TRIGGER audit_seals_append_only`);
      await tx.execute(statement);
      await tx.execute(sql`ALTER TABLE audit_seals ENABLE TRIGGER audit_seals_append_only`);
      await tx.execute(sql`ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only`);
    });
  }

  it("an untouched log verifies; events not yet sealed are counted, not errors, and sealing covers them", async () => {
    expect(events.filter((e) => e.planId === null).map((e) => e.type)).toEqual(["agent.added"]);
    expect(ofPlan(plans[0]!).map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
    const before = await verifyAudit(h.ctx);
    expect(before).toMatchObject({ ok: true, events: events.length, sealed: 0, unsealed: events.length, problems: [] });
    expect(before.head).toBeUndefined(); // seals are numbered from 1: none yet

    const seals = await sealAll(h.ctx);
    const seal = seals.at(-1)!;
    expect(seals.reduce((n, s) => n + s.events, 0)).toBe(events.length);
    expect(seal).toMatchObject({ seq: seals.length, eventsTotal: events.length });
    expect(await sealAudit(h.ctx)).toEqual([]); // nothing new: no empty seal
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: true,
      events: events.length,
      sealed: events.length,
      unsealed: 0,
      head: { seq: seal.seq, hash: seal.hash },
    });

    await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "after the seal" }) });
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, events: events.length + 1, sealed: events.length, unsealed: 1, head: { seq: seal.seq } });
    expect(await sealAll(h.ctx)).toMatchObject([{ seq: seal.seq + 1, prevHash: seal.hash, xidFrom: seal.xidTo, events: 1, eventsTotal: events.length + 1 }]);
  });

  it("an edited event is named with its plan", async () => {
    const victim = ofPlan(plans[1]!)[2]!;
    await tamper(sql`UPDATE audit_events SET data = '{"approvers":["U0MALLORY"]}' WHERE id = ${victim.id}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "plan", kind: "edited", planId: plans[1], eventId: victim.id, message: expect.stringContaining("edited") },
    });
  });

  it("an event deleted from a plan's chain breaks the next link", async () => {
    const [, middle, last] = ofPlan(plans[0]!);
    await tamper(sql`DELETE FROM audit_events WHERE id = ${middle!.id}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "plan", kind: "deleted", planId: plans[0], eventId: last!.id, message: expect.stringContaining("deleted") },
    });
  });

  it("events swapped in a plan's chain are named as reordered", async () => {
    const [first, second] = ofPlan(plans[2]!);
    await tamper(sql`UPDATE audit_events SET id = -1 WHERE id = ${first!.id}`);
    await tamper(sql`UPDATE audit_events SET id = ${first!.id} WHERE id = ${second!.id}`);
    await tamper(sql`UPDATE audit_events SET id = ${second!.id} WHERE id = -1`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "plan", kind: "reordered", planId: plans[2], eventId: first!.id, message: expect.stringContaining("reordered") },
    });
  });

  it("an event deleted from the system chain is named", async () => {
    await database.db.transaction((tx) =>
      appendAudit(tx, { planId: null, type: "test.second", actor: { type: "system", process: "test" }, data: {}, at: h.clock.now() }),
    );
    await database.db.transaction((tx) =>
      appendAudit(tx, { planId: null, type: "test.third", actor: { type: "system", process: "test" }, data: {}, at: h.clock.now() }),
    );
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true });
    const [second] = await database.rows<{ id: number | string }>(sql`SELECT id FROM audit_events WHERE type = 'test.second'`);
    await tamper(sql`DELETE FROM audit_events WHERE id = ${second!.id}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "system", kind: "deleted", message: expect.stringContaining("test.third") },
    });
  });

  /** The seal that covers an event (seals may be cut anywhere, see sealAll). */
  async function sealOf(eventId: number): Promise<number> {
    const [row] = await database.rows<{ seq: number | string }>(sql`
      SELECT s.seq FROM audit_seals s JOIN audit_events e ON e.xid >= s.xid_from AND e.xid < s.xid_to WHERE e.id = ${eventId}`);
    return Number(row!.seq);
  }

  it("a plan's last event deleted, or all of a plan's events, are caught by the seal that covered them", async () => {
    await sealAll(h.ctx);
    const last = ofPlan(plans[0]!).at(-1)!;
    const lastSeal = await sealOf(last.id);
    await tamper(sql`DELETE FROM audit_events WHERE id = ${last.id}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "seals", kind: "deleted", seal: lastSeal, message: expect.stringContaining("1 were deleted") },
    });

    const whole = ofPlan(plans[1]!);
    const wholeSeals = new Set([lastSeal, ...(await Promise.all(whole.map((e) => sealOf(e.id))))]);
    await tamper(sql`DELETE FROM audit_events WHERE plan_id = ${plans[1]!}`);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.ok).toBe(false);
    // Only seals complain: the plan chains that are left still link.
    expect(new Set(verdict.problems.map((p) => `${p.chain} ${p.kind} ${p.seal}`))).toEqual(new Set([...wholeSeals].map((seq) => `seals deleted ${seq}`)));
  });

  it("an event slipped into a sealed range, a changed event id and a changed or deleted seal are named", async () => {
    await sealAll(h.ctx);
    await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "second seal" }) });
    await sealAll(h.ctx);
    await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "third seal" }) });
    const newest = (await sealAll(h.ctx)).at(-1)!;
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, head: { seq: newest.seq } });

    const victim = ofPlan(plans[1]!)[0]!;
    const victimSeal = await sealOf(victim.id);
    await tamper(sql`UPDATE audit_events SET id = 1000000 + id WHERE plan_id = ${plans[1]!}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: false, problem: { chain: "seals", kind: "edited", seal: victimSeal } });
    await tamper(sql`UPDATE audit_events SET id = id - 1000000 WHERE plan_id = ${plans[1]!}`);

    const [sealed] = await database.rows<{ xid: string }>(sql`SELECT xid::text AS xid FROM audit_events WHERE id = ${victim.id}`);
    await tamper(
      sql`INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash, xid) VALUES (NULL, 'forged', '{}', '{}', now(), 'x', 'y', ${sealed!.xid}::xid8)`,
    );
    expect((await verifyAudit(h.ctx)).problems).toContainEqual(expect.objectContaining({ chain: "seals", kind: "added", seal: victimSeal }));
    await tamper(sql`DELETE FROM audit_events WHERE type = 'forged'`);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true });

    const middle = newest.seq - 1;
    await tamper(sql`UPDATE audit_seals SET hash = 'sha256:' || repeat('1', 64) WHERE seq = ${middle}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: false, problem: { chain: "seals", kind: "edited", seal: middle } });
    await tamper(sql`DELETE FROM audit_seals WHERE seq = ${middle}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "seals", kind: "deleted", seal: newest.seq, message: expect.stringContaining(`seal ${middle} is missing`) },
    });
    await tamper(sql`DELETE FROM audit_seals WHERE seq = 1`);
    expect(await verifyAudit(h.ctx)).toMatchObject({
      ok: false,
      problem: { chain: "seals", kind: "deleted", message: expect.stringMatching(/: is the first seal, but seal 1(–\d+)? is missing/) },
    });
  });

  it("the seals refuse UPDATE, DELETE and TRUNCATE", async () => {
    await sealAll(h.ctx);
    for (const statement of [sql`UPDATE audit_seals SET hash = 'x'`, sql`DELETE FROM audit_seals`, sql`TRUNCATE audit_seals`]) {
      const error = await database.db.execute(statement).then(
        () => undefined,
        (err: unknown) => err as Error & { cause?: Error },
      );
      expect(error, String(statement.queryChunks.map((c) => (c as { value?: string[] }).value?.join("")).join(""))).toBeDefined();
      expect((error!.cause ?? error!).message).toMatch(/append-only/);
    }
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, problems: [] });
  });
});
