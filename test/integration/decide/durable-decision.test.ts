import { eq } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideDurably } from "../../../src/slack/durable-decision.ts";
import type { DecideInput } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { openDatabase, type Database } from "../../../src/store/db.ts";
import { decisions, plans } from "../../../src/store/schema.ts";
import { mergeRequest, openHarness, type Harness } from "../../support/harness.ts";
import { privatePostgresAvailable, startPrivatePostgres, type PrivatePostgres } from "../../support/private-postgres.ts";
import { waitFor } from "../../support/wait-for.ts";

/**
 * A Slack click whose decide meets a database outage: on a private cluster the test stops and
 * starts, so the outage is real (ECONNREFUSED, 57P01), not simulated.
 */
const available = privatePostgresAvailable();
if (!available) {
  const message = "initdb/pg_ctl not found (/usr/lib/postgresql/15/bin): the durable-decision test is SKIPPED";
  if (process.env.CI === "true") throw new Error(`CI=true but ${message}`);
  console.warn(`\n!!! ${message}\n`);
}

describe.skipIf(!available)("decideDurably against a database that goes away", () => {
  let pg: PrivatePostgres;
  let database: Database;
  let h: Harness;
  let seq = 0;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    database = await openDatabase({ kind: "postgres", url: pg.url });
    await database.migrate();
    h = await openHarness(database);
  });
  afterAll(async () => {
    await h?.close();
    await database?.close();
    await pg?.destroy();
  });

  const propose = async (): Promise<PlanView> =>
    (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ idempotencyKey: `durable-${seq++}` }) })).plan;
  const approval = (plan: PlanView): DecideInput => ({ planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" });
  const votes = async (plan: PlanView) => (await database.db.select().from(decisions).where(eq(decisions.planId, plan.id))).length;
  const statusOf = async (plan: PlanView) => (await database.db.select({ status: plans.status }).from(plans).where(eq(plans.id, plan.id)))[0]!.status;
  /** A window far longer than the outages here; what the clicker is told is kept in `told`. */
  const holding = (told: string[]) => ({ windowMs: 60_000, tell: async (text: string) => void told.push(text) });

  it("a click held through an outage is recorded once the database is back", async () => {
    const plan = await propose();
    const told: string[] = [];
    await pg.stop();
    const pending = decideDurably(h.ctx, approval(plan), holding(told));
    await new Promise((r) => setTimeout(r, 1500));
    await pg.start();
    const result = await pending;
    expect(result?.status).toBe("approved");
    expect(told).toEqual([]);
    expect(await votes(plan)).toBe(1);
  });

  it("the retry is the whole decide: a plan that expired while the database was down is refused as expired", async () => {
    const plan = await propose();
    const told: string[] = [];
    await pg.stop();
    const pending = decideDurably(h.ctx, approval(plan), holding(told)).then(
      () => undefined,
      (err: unknown) => err,
    );
    await new Promise((r) => setTimeout(r, 1000));
    h.clock.advance(24 * 3600); // the plan's TTL passes while the click waits
    await pg.start();
    const err = await pending;
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe("plan_expired");
    expect(await votes(plan)).toBe(0);
  });

  it("past the window the clicker is told that nothing was recorded, and nothing is", async () => {
    const plan = await propose();
    const told: string[] = [];
    await pg.stop();
    try {
      const result = await decideDurably(h.ctx, approval(plan), { windowMs: 2000, tell: async (text) => void told.push(text) });
      expect(result).toBeUndefined();
      expect(told).toHaveLength(1);
      expect(told[0]).toContain(
        `approval of <${h.ctx.config.publicUrl}/plans/${plan.id}|plan ${plan.id}> was not recorded because Countersign's database was unavailable; click again`,
      );
    } finally {
      await pg.start();
    }
    await waitFor("the database to answer", async () => (await statusOf(plan).catch(() => undefined)) ?? false, 20_000);
    expect(await statusOf(plan)).toBe("pending");
    expect(await votes(plan)).toBe(0);
  });

  it("a server stopping while a click waits for the database tells the clicker at once, instead of holding the shutdown for the window", async () => {
    const plan = await propose();
    const told: string[] = [];
    const stopping = new AbortController();
    const logged: string[] = [];
    const ctx = { ...h.ctx, logger: pino({ level: "warn" }, { write: (line: string) => void logged.push(line) }) };
    await pg.stop();
    try {
      const pending = decideDurably(ctx, approval(plan), { ...holding(told), signal: stopping.signal });
      await waitFor("the click to wait for the database", () => logged.some((l) => l.includes("holding a Slack decision")));
      stopping.abort();
      expect(await pending).toBeUndefined(); // well within the 60 s window
      expect(told).toHaveLength(1);
      expect(told[0]).toContain(`approval of <${h.ctx.config.publicUrl}/plans/${plan.id}|plan ${plan.id}> was not recorded`);
    } finally {
      await pg.start();
    }
    await waitFor("the database to answer", async () => (await statusOf(plan).catch(() => undefined)) ?? false, 20_000);
    expect(await votes(plan)).toBe(0);
  });

  it("a refusal that is not an outage is thrown at once, not retried", async () => {
    const plan = await propose();
    const started = Date.now();
    await expect(decideDurably(h.ctx, { ...approval(plan), hash: "sha256:" + "0".repeat(64) }, holding([]))).rejects.toMatchObject({ code: "hash_mismatch" });
    expect(Date.now() - started).toBeLessThan(5000);
  });
  // The connection drops after the COMMIT went out and before its answer came back: the approval
  // committed, but decide saw the database unreachable. The retry finds the plan decided by this
  // very click; the clicker must not be told it was refused.
  it("an approval that committed although its answer was lost is not told to the clicker as already decided", async () => {
    const plan = await propose();
    const told: string[] = [];
    let lostOnce = false;
    const db = h.ctx.database.db;
    const losing: Database["db"]["transaction"] = async (body, config) => {
      const result = await db.transaction(body, config);
      if (lostOnce) return result;
      lostOnce = true;
      throw Object.assign(new Error("write CONNECTION_CLOSED (the COMMIT's answer was lost)"), { code: "CONNECTION_CLOSED" });
    };
    const database: Database = {
      ...h.ctx.database,
      db: new Proxy(db, { get: (target, prop) => (prop === "transaction" ? losing : Reflect.get(target, prop)) }),
    };
    expect(await decideDurably({ ...h.ctx, database }, approval(plan), holding(told))).toBeUndefined();
    expect(lostOnce).toBe(true);
    expect(told).toEqual([]);
    expect(await votes(plan)).toBe(1);
    expect(await statusOf(plan)).toBe("approved");
    // Someone else's click that decided the plan is still a refusal for this one.
    await expect(decideDurably(h.ctx, { ...approval(plan), actor: { userId: "U0BOB", via: "slack" } }, holding(told))).rejects.toMatchObject({
      code: "already_decided",
    });
  });
});
