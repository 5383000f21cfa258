import { readFileSync } from "node:fs";
import { sql, type SQL } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { auditChainHash, auditContentDigest, GENESIS_HASH } from "../../../src/service/records/audit.ts";
import { type Actor } from "../../../src/contract/agent-api.ts";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { deliverDue } from "../../../src/service/delivery/outbox-drain.ts";
import { rollUpMetrics } from "../../../src/service/operations/metrics.ts";
import { sealFileSink, sealWebhookSink } from "../../../src/service/audit/seal-sinks.ts";
import { sealSlackSink } from "../../../src/slack/seal-sink.ts";
import { deliveryClient } from "../../../src/slack/deliver.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { sealHash, sealFromRow, SEAL_COLUMNS } from "../../../src/service/audit/seal-audit.ts";
import { SEAL_SINKS, signSeals, type SealSigning } from "../../../src/service/audit/sign-seals.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { parseSealsFile, verifySeals, type SealsVerdict } from "../../../src/service/audit/verify-seals.ts";
import type { Database } from "../../../src/store/db.ts";
import { pglite } from "../../support/databases.ts";
import { mergeRequest, openHarness, type Harness } from "../../support/harness.ts";
import { sealAll } from "../../support/seal-all.ts";
import { openSignedSeals, sealKeyPair, type SignedSeals } from "../../support/signed-seals.ts";
import { useSealingPostgres } from "../../support/sealing-postgres.ts";

const sealingPostgres = useSealingPostgres();
const databaseKinds = sealingPostgres ? [pglite, sealingPostgres] : [pglite];

/** Signed seals published outside the database, and the attacks plain `audit verify` cannot see. */
describe.each(databaseKinds)("signed audit seals on $name", (kind) => {
  let fixture: SignedSeals | undefined;
  let database: Database;
  let h: Harness;
  let signing: SealSigning;
  let file: string;
  let publicKeys: import("node:crypto").KeyObject[];
  /** The seqs of the two signed seals: A after three plans, B after two more. */
  let signedA: number;
  let signedB: number;
  let plans: string[];

  const submit = async (title: string) => (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title }) })).plan;
  const publish = () => deliverDue(h.ctx, { handlers: { [SEAL_SINKS.file]: sealFileSink(file) } });
  const published = () => parseSealsFile(readFileSync(file, "utf8"));
  const check = async (): Promise<SealsVerdict> => verifySeals(h.ctx, published(), publicKeys);

  beforeEach(async () => {
    fixture = await openSignedSeals(kind, { everyEvents: 100, everySeconds: 60 });
    ({ database, h, signing, file, publicKeys } = fixture);
    plans = [];
    for (let i = 0; i < 3; i++) {
      const plan = await submit(`signed ${i}`);
      await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
      plans.push(plan.id);
    }
    await sealAll(h.ctx);
    signedA = (await signSeals(h.ctx, signing))!.seq; // the first signature is due at once
    for (let i = 0; i < 2; i++) {
      const plan = await submit(`later ${i}`);
      await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
      plans.push(plan.id);
    }
    await sealAll(h.ctx);
    expect(await signSeals(h.ctx, signing)).toBeUndefined(); // 4 events and no time since A: not due
    h.clock.advance(60);
    signedB = (await signSeals(h.ctx, signing))!.seq;
    expect(signedB).toBeGreaterThan(signedA);
    expect(await publish()).toBe(2);
  });
  afterEach(async () => {
    await fixture?.close();
  });

  /** What an attacker with superuser SQL does: switch the append-only guards off around the change. */
  async function asAttacker(statements: SQL[]): Promise<void> {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`);
      await tx.execute(sql`ALTER TABLE audit_seals DISABLE TRIGGER audit_seals_append_only`);
      for (const s of statements) await tx.execute(s);
      await tx.execute(sql`ALTER TABLE audit_seals ENABLE TRIGGER audit_seals_append_only`);
      await tx.execute(sql`ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only`);
    });
  }

  /** Recomputes every seal's hash from the events as they now are, as an attacker covering their tracks would. */
  async function reseal(): Promise<SQL[]> {
    const seals = (await database.rows<Parameters<typeof sealFromRow>[0]>(sql`SELECT ${SEAL_COLUMNS} FROM audit_seals ORDER BY seq`)).map(sealFromRow);
    let prev = GENESIS_HASH;
    let total = 0;
    const updates: SQL[] = [];
    for (const s of seals) {
      const events = (
        await database.rows<{ id: number | string; hash: string }>(
          sql`SELECT id, hash FROM audit_events WHERE xid >= ${s.xidFrom}::xid8 AND xid < ${s.xidTo}::xid8 ORDER BY id`,
        )
      ).map((e) => ({ id: Number(e.id), hash: e.hash }));
      total += events.length;
      const hash = sealHash({ seq: s.seq, prevHash: prev, xidFrom: s.xidFrom, xidTo: s.xidTo }, events);
      updates.push(sql`UPDATE audit_seals SET prev_hash = ${prev}, hash = ${hash}, events = ${events.length}, events_total = ${total} WHERE seq = ${s.seq}`);
      prev = hash;
    }
    return updates;
  }

  it("signs the newest seal when due, stores it, publishes it once as a JSON line, and a true log verifies against it", async () => {
    const lines = published();
    expect(lines.map((l) => l.seal.seq)).toEqual([signedA, signedB]);
    const [row] = await database.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM audit_seal_signatures`);
    expect(Number(row!.n)).toBe(2);
    const newest = sealFromRow(
      (await database.rows<Parameters<typeof sealFromRow>[0]>(sql`SELECT ${SEAL_COLUMNS} FROM audit_seals ORDER BY seq DESC LIMIT 1`))[0]!,
    );
    expect(lines[1]!.seal).toMatchObject({
      type: "countersign.audit_seal",
      seq: newest.seq,
      hash: newest.hash,
      xidTo: newest.xidTo,
      eventsTotal: newest.eventsTotal,
      kid: signing.key.kid,
    });
    expect(await publish()).toBe(0); // delivered once
    expect(await check()).toMatchObject({ ok: true, checked: 2, newest: { seq: signedB, hash: newest.hash } });
    // A signature is append-only like the seal it signs.
    await expect(database.rows(sql`DELETE FROM audit_seal_signatures`)).rejects.toThrow();

    // Two replicas' sealers due at once: one signs, one publication row is queued.
    await submit("raced");
    await sealAll(h.ctx);
    h.clock.advance(60);
    const raced = await Promise.allSettled([signSeals(h.ctx, signing), signSeals(h.ctx, signing)]);
    expect(raced.filter((r) => r.status === "fulfilled" && r.value !== undefined)).toHaveLength(1);
    expect(await publish()).toBe(1);
    expect(published()).toHaveLength(3);
  });

  it("deleting the newest events and moving the head back passes plain verify, but contradicts the published seal that covered them", async () => {
    const [cut] = await database.rows<{ xid_from: string }>(sql`SELECT xid_from::text AS xid_from FROM audit_seals WHERE seq = ${signedA + 1}`);
    await asAttacker([sql`DELETE FROM audit_events WHERE xid >= ${cut!.xid_from}::xid8`, sql`DELETE FROM audit_seals WHERE seq > ${signedA}`]);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true }); // the attack the issue names
    expect(await check()).toMatchObject({
      ok: false,
      checked: 1,
      contradiction: { seq: signedB, kind: "missing", message: expect.stringContaining(`has no seal ${signedA + 1}`) },
    });

    // Sealing again afterwards writes a different seal under the published seq: still caught.
    await submit("cover-up");
    await sealAll(h.ctx);
    while (Number((await database.rows<{ n: number | string }>(sql`SELECT max(seq) AS n FROM audit_seals`))[0]!.n) < signedB) {
      await submit("cover-up");
      await sealAll(h.ctx);
    }
    const verdict = await check();
    expect(verdict).toMatchObject({ ok: false, contradiction: { seq: signedB, kind: expect.stringMatching(/replaced|rewritten/) } });
  });

  it("editing an event and re-hashing everything after it (and the seals) passes plain verify, but names the first published seal covering it", async () => {
    const victimPlan = plans[0]!;
    const events = await database.rows<{
      id: number | string;
      plan_id: string;
      type: string;
      actor: string;
      data: string;
      at: Date | string;
      prev_hash: string;
      hash: string;
    }>(sql`
      SELECT id, plan_id, type, actor, data, at, prev_hash, hash FROM audit_events WHERE plan_id = ${victimPlan} ORDER BY id`);
    const updates: SQL[] = [];
    let prev = events[0]!.prev_hash;
    for (const [i, e] of events.entries()) {
      const data = i === 1 ? { ...JSON.parse(e.data), forged: true } : JSON.parse(e.data);
      const hash = auditChainHash(prev, auditContentDigest({ planId: e.plan_id, type: e.type, actor: JSON.parse(e.actor) as Actor, data, at: new Date(e.at) }));
      updates.push(sql`UPDATE audit_events SET data = ${JSON.stringify(data)}, prev_hash = ${prev}, hash = ${hash} WHERE id = ${e.id}`);
      prev = hash;
    }
    await asAttacker(updates);
    await asAttacker(await reseal());
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true });
    expect(await check()).toMatchObject({ ok: false, checked: 0, contradiction: { seq: signedA, kind: "replaced" } });
  });

  it("an edit left un-resealed is named as events no longer hashing to the published seal; a forged line fails its signature", async () => {
    const [last] = await database.rows<{ id: number | string }>(sql`SELECT max(id) AS id FROM audit_events WHERE plan_id = ${plans[4]!}`);
    await asAttacker([sql`UPDATE audit_events SET data = '{"reason":"forged"}' WHERE id = ${last!.id}`]);
    expect(await check()).toMatchObject({
      ok: false,
      checked: 1,
      contradiction: { seq: signedB, kind: "rewritten", message: expect.stringContaining("no longer hash") },
    });

    const forged = readFileSync(file, "utf8").replace(/"eventsTotal":(\d+)/, (_, n) => `"eventsTotal":${Number(n) + 1}`);
    expect(await verifySeals(h.ctx, parseSealsFile(forged), publicKeys)).toMatchObject({ ok: false, contradiction: { seq: signedA, kind: "signature" } });
    expect(() => parseSealsFile('{"seq":1}\n')).toThrow(/line 1: not a published seal/);
  });

  it("a log pruned by the retention purge still verifies against its published seals", async () => {
    await rollUpMetrics(h.ctx, { maxSteps: 20 }); // a purge takes only events the metrics have counted (the sweep rolls up first)
    const [purged] = await database.rows<{ n: number }>(sql`SELECT countersign_purge_plans(now(), 'test: prune the cancelled plans') AS n`);
    expect(purged!.n).toBe(2);
    expect(
      Number(
        (
          await database.rows<{ n: number | string }>(
            sql`SELECT count(*) AS n FROM audit_events WHERE plan_id = ANY (${sql.raw(`ARRAY['${plans[3]}','${plans[4]}']::uuid[]`)})`,
          )
        )[0]!.n,
      ),
    ).toBe(0);
    expect(
      Number(
        (
          await database.rows<{ n: number | string }>(
            sql`SELECT count(*) AS n FROM plans WHERE id = ANY (${sql.raw(`ARRAY['${plans[3]}','${plans[4]}']::uuid[]`)})`,
          )
        )[0]!.n,
      ),
    ).toBe(0);
    await sealAll(h.ctx);
    h.clock.advance(60);
    await signSeals(h.ctx, signing);
    await publish();
    expect(await check()).toMatchObject({ ok: true });
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true });
  });
});

/** The other two places a signed seal is published: a webhook (real HTTP) and slack.auditChannel (the Slack emulator). */
describe("publishing signed seals", () => {
  it("POSTs the signed seal to the webhook and posts seq, hash and signature to the audit channel, each once", async () => {
    const received: unknown[] = [];
    const hook = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        received.push(JSON.parse(body));
        res.writeHead(received.length === 1 ? 503 : 204).end(); // the first try fails: the outbox retries it
      });
    });
    await new Promise<void>((r) => hook.listen(0, "127.0.0.1", r));
    const slack = new SlackEmulator();
    await slack.start();
    const database = await pglite.open();
    const h = await openHarness(database);
    try {
      const { key } = await sealKeyPair();
      const webhookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/seals`;
      const signing: SealSigning = { key, policy: { everyEvents: 1, everySeconds: 60, webhookUrl }, slackChannel: "C0AUDIT" };
      await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "published" }) });
      await sealAll(h.ctx);
      const signed = (await signSeals(h.ctx, signing))!;
      const handlers = {
        [SEAL_SINKS.webhook]: sealWebhookSink(webhookUrl),
        [SEAL_SINKS.slack]: sealSlackSink(h.ctx, deliveryClient(slack.botToken, slack.url), "C0AUDIT"),
      };
      const policy = { maxAttempts: 5, leaseMs: 60_000, backoffMs: () => 0 };
      await deliverDue(h.ctx, { handlers, policy });
      h.clock.advance(1);
      await deliverDue(h.ctx, { handlers, policy });
      expect(received).toEqual([signed, signed]); // refused once, delivered once
      expect(await deliverDue(h.ctx, { handlers, policy })).toBe(0);
      const posts = slack.messagesIn("C0AUDIT");
      expect(posts).toHaveLength(1);
      expect(posts[0]!.text).toContain(`Audit seal *${signed.seq}*`);
      expect(posts[0]!.text).toContain(signed.hash);
      expect(posts[0]!.text).toContain(signed.signature);
    } finally {
      await h.close();
      await database.close();
      await slack.stop();
      await new Promise((r) => hook.close(r));
    }
  });
});
