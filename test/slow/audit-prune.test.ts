import { readFileSync } from "node:fs";
import { randomUUID, type KeyObject } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { auditVerdictLines } from "../../src/cli/agents.ts";
import { cancelPlan } from "../../src/service/intake/cancel-plan.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { exportAudit, type ExportedEvent, type ExportedPrunedEvent } from "../../src/service/audit/export-audit.ts";
import { readMetrics, rollUpMetrics } from "../../src/service/operations/metrics.ts";
import { deliverDue } from "../../src/service/delivery/outbox-drain.ts";
import { sweepRetention } from "../../src/service/operations/retention.ts";
import { sealFileSink } from "../../src/service/audit/seal-sinks.ts";
import { SEAL_SINKS, signSeals, type SealSigning } from "../../src/service/audit/sign-seals.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../src/service/audit/verify-audit.ts";
import { parseSealsFile, verifySeals } from "../../src/service/audit/verify-seals.ts";
import type { Database } from "../../src/store/db.ts";
import { pglite } from "../support/databases.ts";
import { mergeRequest, type Harness } from "../support/harness.ts";
import { sealAll } from "../support/seal-all.ts";
import { openSignedSeals, type SignedSeals } from "../support/signed-seals.ts";
import { useSealingPostgres } from "../support/sealing-postgres.ts";

/** Seals wait for the whole server's oldest transaction: PostgreSQL on a private cluster (see sealing-postgres.ts). */
const sealingPostgres = useSealingPostgres();
const databaseKinds = sealingPostgres ? [pglite, sealingPostgres] : [pglite];

const DAY = 86_400;
const RETENTION = { days: 1, plans: true };

/**
 * Retention deletes purged plans' audit events, leaving a checkpoint (audit_pruned) from
 * which every seal is still recomputed, so the log verifies, also against seals published before
 * the purge, while deletions, edits and forged checkpoints are still named.
 */
describe.each(databaseKinds)("pruning purged plans' audit events on $name", (kind) => {
  let fixture: SignedSeals | undefined;
  let database: Database;
  let h: Harness;
  let signing: SealSigning;
  let publicKeys: KeyObject[];
  let file: string;
  /** Plans that ended on day 0 (three cancelled, one rejected), and two still open (pending, approved). */
  let ended: string[];
  let pending: string;
  let approved: string;
  /** The ended plans' events as they were before the purge. */
  let endedEvents: { id: number; hash: string }[];
  let metricsBefore: Awaited<ReturnType<typeof readMetrics>>;

  const count = async (query: SQL) => Number((await database.rows<{ n: string | number }>(query))[0]!.n);
  const ids = (list: string[]) => sql.raw(`ARRAY[${list.map((p) => `'${p}'`).join(",")}]::uuid[]`);
  const submit = async (title: string) => (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title }) })).plan;
  const publish = () => deliverDue(h.ctx, { handlers: { [SEAL_SINKS.file]: sealFileSink(file) } });
  const checkPublished = () => verifySeals(h.ctx, parseSealsFile(readFileSync(file, "utf8")), publicKeys);

  /** What an attacker with superuser SQL does: switch every trigger off (the guards, and foreign keys) for the change. */
  async function asAttacker(statements: SQL[]): Promise<void> {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL session_replication_role = replica`);
      for (const s of statements) await tx.execute(s);
    });
  }
  /** A plan's events moved into the checkpoint as a purge would have written them, naming `purge`, and deleted. */
  const passOffAsPruned = (planId: string, purge: SQL, { keepEvents = false } = {}): SQL[] => [
    sql`INSERT INTO audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id)
        SELECT id, plan_id, xid, at, prev_hash, hash, ${purge} FROM audit_events WHERE plan_id = ${planId} AND xid IS NOT NULL`,
    ...(keepEvents ? [] : [sql`DELETE FROM audit_events WHERE plan_id = ${planId}`]),
  ];
  const lastPurge = sql`(SELECT max(id) FROM purges)`;

  beforeEach(async () => {
    fixture = await openSignedSeals(kind, { everyEvents: 1000, everySeconds: 60 });
    ({ database, h, signing, file, publicKeys } = fixture);

    ended = [];
    for (let i = 0; i < 3; i++) {
      const plan = await submit(`ends ${i}`);
      await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
      ended.push(plan.id);
    }
    const rejected = await submit("rejected");
    await decide(h.ctx, { planId: rejected.id, hash: rejected.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "not today" });
    ended.push(rejected.id);
    pending = (await submit("stays pending")).id;
    const toApprove = await submit("stays approved");
    await decide(h.ctx, { planId: toApprove.id, hash: toApprove.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    approved = toApprove.id;

    // Sealed, signed and published before any purge.
    await sealAll(h.ctx);
    expect(await signSeals(h.ctx, signing)).toBeDefined();
    expect(await publish()).toBe(1);
    endedEvents = (
      await database.rows<{ id: number | string; hash: string }>(sql`SELECT id, hash FROM audit_events WHERE plan_id = ANY (${ids(ended)}) ORDER BY id`)
    ).map((e) => ({ id: Number(e.id), hash: e.hash }));
    expect(endedEvents.length).toBeGreaterThanOrEqual(8);
    metricsBefore = await readMetrics(h.ctx);

    h.clock.advance(2 * DAY);
    expect(await sweepRetention(h.ctx, { policy: RETENTION })).toMatchObject({ plans: 4 });
  });
  afterEach(async () => {
    await fixture?.close();
  });

  it("deletes the final plans' audit events behind a checkpoint, never an open plan's; the log verifies, also against seals published before, and the metrics still count them", async () => {
    expect(await count(sql`SELECT count(*) AS n FROM plans WHERE id = ANY (${ids(ended)})`)).toBe(0);
    expect(await count(sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ANY (${ids(ended)})`)).toBe(0);
    const checkpoint = await database.rows<{ id: number | string; hash: string; plan_id: string }>(sql`SELECT id, hash, plan_id FROM audit_pruned ORDER BY id`);
    expect(checkpoint.map((c) => ({ id: Number(c.id), hash: c.hash }))).toEqual(endedEvents);
    expect(new Set(checkpoint.map((c) => c.plan_id))).toEqual(new Set(ended));
    expect(await count(sql`SELECT count(*) AS n FROM decisions WHERE plan_id = ANY (${ids(ended)})`)).toBe(0);
    expect(await count(sql`SELECT count(*) AS n FROM outbox WHERE plan_id = ANY (${ids(ended)})`)).toBe(0);
    // One record of the call: who, why, the cutoff, and how many of each kind of row it took.
    const [record] = await database.rows<{
      reason: string;
      by_role: string;
      before: Date | string;
      plans: number;
      decisions: number;
      outbox: number;
      audit_events: number;
    }>(sql`
      SELECT reason, by_role, before, plans, decisions, outbox, audit_events FROM purges`);
    expect(record).toMatchObject({
      reason: "retention: final plans older than 1 days",
      by_role: expect.any(String),
      plans: 4,
      decisions: 1,
      outbox: 0,
      audit_events: endedEvents.length,
    }); // no sinks here: no outbox rows
    expect(new Date(record!.before).getTime()).toBeLessThanOrEqual(Date.now());

    // Open plans, however old, keep their rows and every event.
    expect(await database.rows(sql`SELECT id, status::text AS status FROM plans ORDER BY created_at`)).toEqual([
      { id: pending, status: "pending" },
      { id: approved, status: "approved" },
    ]);
    expect(await count(sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ${approved}`)).toBeGreaterThanOrEqual(3);
    expect(await count(sql`SELECT count(*) AS n FROM audit_pruned WHERE plan_id IN (${pending}, ${approved})`)).toBe(0);

    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problems).toEqual([]);
    expect(verdict).toMatchObject({ ok: true, pruned: endedEvents.length, unsealed: 0 });
    expect(auditVerdictLines(verdict)[0]).toContain(`(${endedEvents.length} of them pruned by retention, checked through the purge's checkpoint)`);
    expect(await checkPublished()).toMatchObject({ ok: true, checked: 1 });

    // The counters were rolled up before the events left.
    const metricsAfter = await readMetrics(h.ctx);
    expect(metricsAfter.plansTotal).toEqual(metricsBefore.plansTotal);
    expect(metricsAfter.decisionsTotal).toEqual(metricsBefore.decisionsTotal);
    expect(metricsAfter.plansTotal).toContainEqual({ status: "cancelled", count: 3 });

    // Life goes on: later seals, signed and published after the purge, cover the checkpoint too.
    const later = await submit("after the purge");
    await cancelPlan(h.ctx, { agent: h.agent, planId: later.id });
    await sealAll(h.ctx);
    h.clock.advance(60);
    expect(await signSeals(h.ctx, signing)).toBeDefined();
    expect(await publish()).toBe(1);
    expect(await checkPublished()).toMatchObject({ ok: true, checked: 2 });
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, pruned: endedEvents.length });

    // The export states the checkpoint where the events were, in id order, with the purge that took them.
    const exported: (ExportedEvent | ExportedPrunedEvent)[] = [];
    for await (const e of exportAudit(h.ctx, { since: new Date(0), batch: 3 })) exported.push(e);
    expect(exported.map((e) => e.id)).toEqual([...exported.map((e) => e.id)].sort((a, b) => a - b));
    const prunedLines = exported.filter((e): e is ExportedPrunedEvent => "pruned" in e);
    expect(prunedLines.map((e) => ({ id: e.id, hash: e.hash }))).toEqual(endedEvents);
    expect(prunedLines[0]).toMatchObject({
      planId: expect.any(String),
      xid: expect.stringMatching(/^\d+$/),
      pruned: { purge: expect.any(Number), reason: "retention: final plans older than 1 days" },
    });
    expect(prunedLines[0]).not.toHaveProperty("data");
    expect(exported.filter((e) => !("pruned" in e) && e.planId === approved).length).toBeGreaterThanOrEqual(3);
  });

  it("takes a final plan only once its events are sealed and rolled up, and, since seals are signed, under a signed seal (the sweep signs first when due)", async () => {
    // A plan that ended long ago (in business time), but after the signature.
    h.clock.time = new Date(Date.now() - 2 * DAY * 1000);
    const late = await submit("ends after the signature");
    await cancelPlan(h.ctx, { agent: h.agent, planId: late.id });
    const purge = () => count(sql`SELECT countersign_purge_plans(now(), 'test: prune') AS n`);
    const purges = await count(sql`SELECT count(*) AS n FROM purges`);
    // Not yet sealed: the function takes nothing, and records nothing.
    expect(await purge()).toBe(0);
    await sealAll(h.ctx);
    expect(await purge()).toBe(0);
    // Sealed and counted by the metrics, but the newest signature predates it.
    await rollUpMetrics(h.ctx, { maxSteps: 20 });
    expect(await purge()).toBe(0);
    expect(await count(sql`SELECT count(*) AS n FROM purges`)).toBe(purges);
    expect(await count(sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ${late.id}`)).toBe(2);

    // The sweep, given the server's signing, signs the newest seal first when one is due, then purges.
    h.clock.advance(4 * DAY); // past the last signature, so a new one is due
    expect(await sweepRetention(h.ctx, { policy: RETENTION, signing })).toMatchObject({ plans: 1 });
    expect(await count(sql`SELECT count(*) AS n FROM audit_seal_signatures`)).toBe(2);
    expect(await publish()).toBe(1);
    expect(await checkPublished()).toMatchObject({ ok: true, checked: 2 });
    expect(await count(sql`SELECT count(*) AS n FROM audit_pruned WHERE plan_id = ${late.id}`)).toBe(2);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true });
  });

  it("only the purge writes the checkpoint or deletes events; nobody changes either", async () => {
    const refused = (statement: SQL) =>
      database.rows(statement).then(
        () => "accepted",
        (err: Error) => String((err.cause as Error | undefined)?.message ?? err.message),
      );
    expect(
      await refused(sql`INSERT INTO audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id) VALUES (999999, ${pending}, '1', now(), 'x', 'y', 1)`),
    ).toMatch(/audit_pruned is written only by countersign_purge_plans\(\) and never changed: INSERT refused/);
    expect(await refused(sql`UPDATE audit_pruned SET hash = 'y'`)).toMatch(/UPDATE refused/);
    expect(await refused(sql`DELETE FROM audit_pruned`)).toMatch(/DELETE refused/);
    expect(await refused(sql`TRUNCATE audit_pruned`)).toMatch(/audit_pruned is append-only: TRUNCATE refused/);
    expect(await refused(sql`DELETE FROM purges`)).toMatch(/purges is append-only: DELETE refused/);
    expect(await refused(sql`DELETE FROM audit_events WHERE plan_id = ${approved}`)).toMatch(
      /audit_events is append-only: DELETE refused \(rows leave only with their plan, through countersign_purge_plans\(\)\)/,
    );
    expect(await count(sql`SELECT count(*) AS n FROM audit_pruned`)).toBe(endedEvents.length);
  });

  it("countersign.purge opens the guards only inside countersign_purge_plans(): a role that may write every table and sets it by hand is refused, and the same role purges through the function", async () => {
    const role = `cs_writer_${randomUUID().slice(0, 8)}`;
    await database.rows(sql.raw(`CREATE ROLE ${role}`));
    try {
      await database.rows(sql.raw(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`));
      await database.rows(sql.raw(`GRANT EXECUTE ON FUNCTION countersign_purge_plans(timestamptz, text) TO ${role}`));
      const asRole = <T>(statement: SQL, { flag = true } = {}) =>
        database.db.transaction(async (tx) => {
          await database.rows(sql.raw(`SET LOCAL ROLE ${role}`), tx);
          if (flag) await database.rows(sql`SELECT set_config('countersign.purge', 'on', true)`, tx);
          return database.rows<T>(statement, tx);
        });
      const refused = (statement: SQL) =>
        asRole(statement).then(
          () => "accepted",
          (err: Error) => String((err.cause as Error | undefined)?.message ?? err.message),
        );
      const byHand = (table: string, op: string) =>
        new RegExp(
          `^${table}: ${op} refused: countersign\\.purge opens the append-only guards only inside countersign_purge_plans\\(\\), which runs as its owner \\(\\w+\\), not for ${role}`,
        );
      expect(await refused(sql`DELETE FROM audit_events WHERE plan_id = ${approved}`)).toMatch(byHand("audit_events", "DELETE"));
      expect(await refused(sql`DELETE FROM decisions WHERE plan_id = ${approved}`)).toMatch(byHand("decisions", "DELETE"));
      expect(await refused(sql`DELETE FROM plans WHERE id = ${pending}`)).toMatch(byHand("plans", "DELETE"));
      expect(
        await refused(sql`INSERT INTO audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id) VALUES (999999, ${pending}, '1', now(), 'x', 'y', 1)`),
      ).toMatch(byHand("audit_pruned", "INSERT"));
      // Nor can it put a function of its own where the guards look (as every role could in public before PostgreSQL 15).
      await database.rows(sql.raw(`GRANT CREATE ON SCHEMA public TO ${role}`));
      expect(
        await refused(sql`CREATE FUNCTION public.countersign_purge_open(guarded_table name, guarded_op text) RETURNS boolean LANGUAGE sql AS 'SELECT true'`),
      ).toMatch(/function "countersign_purge_open" already exists with same argument types/);
      expect(await count(sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ${approved}`)).toBeGreaterThanOrEqual(3);

      // A plan that becomes purgeable (sealed, rolled up, under a signed seal), purged by that role through the function.
      h.clock.time = new Date(Date.now() - 2 * DAY * 1000);
      const late = await submit("ends, then purged by a granted role");
      await cancelPlan(h.ctx, { agent: h.agent, planId: late.id });
      await sealAll(h.ctx);
      await rollUpMetrics(h.ctx, { maxSteps: 20 });
      h.clock.advance(4 * DAY);
      expect(await signSeals(h.ctx, signing)).toBeDefined();
      const [purged] = await asRole<{ n: number | string }>(sql`SELECT countersign_purge_plans(now(), 'test: by a granted role') AS n`, { flag: false });
      expect(Number(purged!.n)).toBe(1);
      expect(await count(sql`SELECT count(*) AS n FROM audit_pruned WHERE plan_id = ${late.id}`)).toBe(2);
      expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true, problems: [] });
    } finally {
      await database.rows(sql.raw(`DROP OWNED BY ${role}`));
      await database.rows(sql.raw(`DROP ROLE ${role}`));
    }
  });

  it("after a purge, an event deleted any other way is still named, by verify and against the published seal", async () => {
    const [victim] = await database.rows<{ id: number | string }>(sql`SELECT max(id) AS id FROM audit_events WHERE plan_id = ${approved}`);
    await asAttacker([sql`DELETE FROM audit_events WHERE id = ${victim!.id}`]);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.ok).toBe(false);
    expect(verdict.problems).toContainEqual(expect.objectContaining({ chain: "seals", kind: "deleted" }));
    expect(await checkPublished()).toMatchObject({ ok: false, contradiction: { kind: "rewritten" } });
  });

  it("after a purge, an edited event is named", async () => {
    const [victim] = await database.rows<{ id: number | string }>(sql`SELECT min(id) AS id FROM audit_events WHERE plan_id = ${approved}`);
    await asAttacker([sql`UPDATE audit_events SET data = '{"forged":true}' WHERE id = ${victim!.id}`]);
    expect((await verifyAudit(h.ctx)).problem).toMatchObject({ chain: "plan", kind: "edited", eventId: Number(victim!.id) });
    expect(await checkPublished()).toMatchObject({ ok: false, contradiction: { kind: "rewritten" } });
  });

  it("a forged checkpoint line breaks its pruned chain and its seal, and contradicts the seal published before the purge", async () => {
    const line = endedEvents[0]!; // the first of its chain: the next line links to it
    await asAttacker([sql`UPDATE audit_pruned SET hash = ${"sha256:" + "0".repeat(64)} WHERE id = ${line.id}`]);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.ok).toBe(false);
    expect(verdict.problems).toContainEqual(expect.objectContaining({ chain: "seals", kind: "edited" }));
    expect(verdict.problems).toContainEqual(expect.objectContaining({ chain: "pruned", kind: "edited" }));
    expect(await checkPublished()).toMatchObject({
      ok: false,
      checked: 0,
      contradiction: { kind: "rewritten", message: expect.stringContaining("checkpoint") },
    });
  });

  it("an open plan's event passed off as pruned (deleted, its line copied into the checkpoint) still matches the seals, but its chain names the pretence", async () => {
    const [first] = await database.rows<{ id: number | string; plan_id: string; xid: string; at: Date | string; prev_hash: string; hash: string }>(sql`
      SELECT id, plan_id, xid::text AS xid, at, prev_hash, hash FROM audit_events WHERE plan_id = ${approved} ORDER BY id LIMIT 1`);
    await asAttacker([
      sql`DELETE FROM audit_events WHERE id = ${first!.id}`,
      sql`INSERT INTO audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id)
          VALUES (${first!.id}, ${first!.plan_id}, ${first!.xid}::xid8, ${new Date(first!.at).toISOString()}::timestamptz, ${first!.prev_hash}, ${first!.hash}, (SELECT max(id) FROM purges))`,
    ]);
    expect(await checkPublished()).toMatchObject({ ok: true }); // the seal only ever saw (id, hash)
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problem).toMatchObject({
      chain: "plan",
      planId: approved,
      kind: "deleted",
      message: expect.stringContaining("a purge takes a plan's whole chain"),
    });
  });

  it("the reviewer's forgery: a sealed chain of a plan that is still there, moved into the checkpoint under a purge nobody ran, is named though every seal still matches", async () => {
    const chain = await count(sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ${approved}`);
    expect(chain).toBeGreaterThanOrEqual(3);
    await asAttacker(passOffAsPruned(approved, sql`999999`));
    // The seals only ever saw (id, hash), and the chain still links from its genesis.
    const published = await checkPublished();
    expect(published).toMatchObject({ ok: true });
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.ok).toBe(false);
    expect(verdict.problem).toMatchObject({
      chain: "pruned",
      kind: "deleted",
      planId: approved,
      purge: 999999,
      message: expect.stringContaining("the plan is still there"),
    });
    expect(verdict.problems).toContainEqual(
      expect.objectContaining({
        chain: "pruned",
        kind: "added",
        purge: 999999,
        message: expect.stringContaining(`${chain} checkpoint line(s) of 1 plan(s) name purge 999999, which purges does not record`),
      }),
    );
    expect(verdict.problems.filter((p) => p.chain !== "pruned")).toEqual([]);
    // `audit verify --seals` runs both, and fails on the verdict.
    expect(published.ok && verdict.ok).toBe(false);
    expect(auditVerdictLines(verdict)[0]).toBe(`Audit log BROKEN at the purge checkpoint (deleted): ${verdict.problem!.message}`);
  });

  it("a forger who also deletes the plan and names the real purge is caught by the purge's own record", async () => {
    const chain = await count(sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ${pending}`);
    const [purge] = await database.rows<{ id: number | string }>(sql`SELECT max(id) AS id FROM purges`);
    await asAttacker([...passOffAsPruned(pending, lastPurge), sql`DELETE FROM plans WHERE id = ${pending}`]);
    expect(await checkPublished()).toMatchObject({ ok: true });
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problems).toEqual([
      expect.objectContaining({
        chain: "pruned",
        kind: "added",
        purge: Number(purge!.id),
        message: expect.stringContaining(
          `purge ${purge!.id} recorded ${endedEvents.length} pruned event(s), but ${endedEvents.length + chain} checkpoint lines name it`,
        ),
      }),
    ]);
  });

  it("a pruned plan's events still in the log, or checkpoint lines gone from a purge, are named", async () => {
    await asAttacker(passOffAsPruned(approved, lastPurge, { keepEvents: true }));
    const [first] = await database.rows<{ id: number | string }>(sql`SELECT min(id) AS id FROM audit_events WHERE plan_id = ${approved}`);
    expect((await verifyAudit(h.ctx)).problems).toContainEqual(
      expect.objectContaining({
        chain: "pruned",
        kind: "added",
        planId: approved,
        eventId: Number(first!.id),
        message: expect.stringContaining("are still in the log, but purge"),
      }),
    );

    await asAttacker([sql`DELETE FROM audit_pruned WHERE plan_id = ${approved}`, sql`DELETE FROM audit_pruned WHERE plan_id = ${ended[0]!}`]);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problems).toContainEqual(
      expect.objectContaining({
        chain: "pruned",
        kind: "deleted",
        message: expect.stringMatching(/recorded \d+ pruned event\(s\), but only \d+ checkpoint lines name it/),
      }),
    );
    expect(verdict.problems).toContainEqual(expect.objectContaining({ chain: "seals", kind: "deleted" }));
  });

  it("a checkpoint line no seal covers was not written by a purge", async () => {
    await submit("unsealed");
    const [last] = await database.rows<{ id: number | string; xid: string }>(sql`SELECT id, xid::text AS xid FROM audit_events ORDER BY id DESC LIMIT 1`);
    await asAttacker([
      sql`
      INSERT INTO audit_pruned (id, plan_id, xid, at, prev_hash, hash, purge_id)
      VALUES (${Number(last!.id) + 1000}, gen_random_uuid(), ${last!.xid}::xid8, now(), ${"sha256:" + "1".repeat(64)}, ${"sha256:" + "2".repeat(64)}, 1)`,
    ]);
    const verdict = await verifyAudit(h.ctx);
    expect(verdict.problems).toContainEqual(expect.objectContaining({ chain: "pruned", kind: "added", message: expect.stringContaining("no seal covers") }));
  });
});
