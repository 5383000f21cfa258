import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { auditChainHash, auditContentDigest, planGenesis } from "../../../src/service/records/audit.ts";
import { PLAN_CHANNEL } from "../../../src/service/records/plan-signals.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** Far longer than any test here runs: a wait that ends did so because it was woken. */
const LONG_MS = 600_000;

/**
 * The hot path of intake (store-new-plan.ts): a new plan without idempotency key or supersedes is
 * one statement written as text, its first audit event hashed in JS, and its announcement sent
 * after the commit, coalesced with other new plans'.
 */
describe.each(databaseKinds)("storing a new plan on $name", (kind) => {
  const h = useHarness(kind);
  let stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops) await stop();
    stops = [];
  });

  it("writes the plan's first audit event as the chain would: the plan's genesis, then the hash of it and the content", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "first event" }) });
    const [event] = await h.ctx.database.rows<{
      type: string;
      actor: string;
      data: string;
      at: string | Date;
      prev_hash: string;
      hash: string;
      xid: string | null;
    }>(sql`SELECT type, actor, data, at, prev_hash, hash, xid::text AS xid FROM audit_events WHERE plan_id = ${plan.id}`);
    expect(event).toBeDefined();
    expect(event!.type).toBe("plan.submitted");
    expect(event!.xid).not.toBeNull();
    expect(event!.prev_hash).toBe(planGenesis(plan.id));
    const content = auditContentDigest({
      planId: plan.id,
      type: event!.type,
      actor: JSON.parse(event!.actor),
      data: JSON.parse(event!.data),
      at: new Date(event!.at),
    });
    expect(event!.hash).toBe(auditChainHash(planGenesis(plan.id), content));
    const [outbox] = await h.ctx.database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM outbox WHERE plan_id = ${plan.id}`);
    expect(Number(outbox!.n)).toBe(h.ctx.sinks.filter((s) => s !== "webhook").length);
  });

  it("announces new plans after their commit, at most one announcement per plan (coalesced when they come together), naming them pending", async () => {
    const heard: string[] = [];
    stops.push(await h.ctx.database.listen(PLAN_CHANNEL, (payload) => void heard.push(payload)));
    const aborted = new AbortController();
    stops.push(async () => aborted.abort());
    const woken = h.ctx.signals.waitAny(LONG_MS, aborted.signal);
    const submitted = await Promise.all(
      Array.from({ length: 12 }, (_, i) => submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `burst ${i}` }) })),
    );
    await woken;
    const ids = new Set(submitted.map((s) => s.plan.id));
    await expect.poll(() => heard.filter((p) => ids.has(p.split(" ")[0]!)).length, { timeout: 30_000 }).toBeGreaterThan(0);
    const ours = heard.filter((p) => ids.has(p.split(" ")[0]!));
    // How many share an announcement depends on how close together they commit (50 ms windows).
    expect(ours.length).toBeLessThanOrEqual(ids.size);
    for (const payload of ours) expect(payload).toMatch(/ pending$/);
  });
});
