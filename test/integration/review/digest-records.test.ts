import { and, asc, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { decide } from "../../../src/service/decide/decide.ts";
import { digestAt, nextPostInMs, recordDigest, waitingPreviews } from "../../../src/service/review/digest.ts";
import { bookChannelSlot, postedPreviewOf, recordPostedPreview } from "../../../src/service/delivery/slack-messages.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { outbox } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** The statements behind Slack digests (src/service/review/digest.ts), on each database. */
describe.each(databaseKinds)("digest records on $name", (kind) => {
  const h = useHarness(kind, { sinks: ["slack"], targets: (url) => ({ crm: targetConfig(url, { policy: { riskByOp: { delete: "high" } } }) }) });

  // A second apart, as plans arriving in turn: a digest lists its plans in the order submitted.
  const submit = async (n: number, op: "merge" | "delete" = "merge") => {
    h.clock.advance(1);
    const action = { kind: "http.json", target: "crm", path: "/contacts/1", op, ...(op === "merge" ? { body: { email: `d${n}@new.example` } } : {}) };
    return (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `Digest ${n}`, actions: [action] }) })).plan;
  };
  const rowsOf = (planId: string) =>
    h.ctx.database.db
      .select({ id: outbox.id, priority: outbox.priority, delivered: outbox.deliveredAt })
      .from(outbox)
      .where(and(eq(outbox.planId, planId), eq(outbox.kind, "slack")))
      .orderBy(asc(outbox.id));

  it("reads a lane's queued previews in order with their recorded risk, and records a digest in one statement that delivers only the listed plans' previews", async () => {
    await h.ctx.database.rows(sql`UPDATE outbox SET delivered_at = now() WHERE delivered_at IS NULL`);
    const [a, risky, b] = [await submit(1), await submit(2, "delete"), await submit(3)];
    const head = (await rowsOf(a.id))[0]!;
    const waiting = await waitingPreviews(h.ctx, { headRowId: head.id, limit: 10 });
    expect(waiting.map((w) => [w.planId, w.highRisk])).toEqual([
      [a.id, false],
      [risky.id, true],
      [b.id, false],
    ]);
    expect(waiting[0]!.submittedAt).toBe(new Date(a.createdAt).getTime());
    expect(await waitingPreviews(h.ctx, { headRowId: head.id, limit: 2 })).toHaveLength(2);

    // A's approval is queued behind its preview: the digest delivers the preview, never the approval.
    await decide(h.ctx, { planId: a.id, hash: a.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    await recordDigest(h.ctx, { channel: "C0DIGEST", ts: "1700000000.000100", planIds: [a.id, b.id] });

    const aRows = await rowsOf(a.id);
    // decision.approve and plan.approved stay queued for the digest's thread.
    expect(aRows.map((r) => [r.priority, r.delivered !== null])).toEqual([
      [0, true],
      [1, false],
      [1, false],
    ]);
    expect((await rowsOf(b.id)).every((r) => r.delivered !== null)).toBe(true);
    expect((await rowsOf(risky.id))[0]!.delivered).toBeNull();
    expect(await postedPreviewOf(h.ctx, a.id)).toEqual({ channel: "C0DIGEST", ts: "1700000000.000100", threadTs: null, digest: true });
    expect(await postedPreviewOf(h.ctx, risky.id)).toBeUndefined();

    const lines = await digestAt(h.ctx, { channel: "C0DIGEST", ts: "1700000000.000100" });
    expect(lines.map((l) => [l.planId, l.status, l.target, l.op])).toEqual([
      [a.id, "approved", "crm", "merge"],
      [b.id, "pending", "crm", "merge"],
    ]);
    expect(lines[0]!.reviewUrl).toBe(a.reviewUrl);
  });

  it("a plan already shown by its own preview keeps it; the digest records the others", async () => {
    const [own, other] = [await submit(4), await submit(5)];
    await recordPostedPreview(h.ctx, own.id, { channel: "C0DIGEST", ts: "1700000000.000200" });
    await recordDigest(h.ctx, { channel: "C0DIGEST", ts: "1700000000.000300", planIds: [own.id, other.id] });
    expect(await postedPreviewOf(h.ctx, own.id)).toEqual({ channel: "C0DIGEST", ts: "1700000000.000200", threadTs: null, digest: false });
    expect((await digestAt(h.ctx, { channel: "C0DIGEST", ts: "1700000000.000300" })).map((l) => l.planId)).toEqual([other.id]);
  });

  it("tells how long until a channel's next post: none booked is now, a booked slot is ahead", async () => {
    expect(await nextPostInMs(h.ctx, "C0NEVERUSED")).toBe(0);
    await bookChannelSlot(h.ctx, "C0BOOKED", 1000);
    await bookChannelSlot(h.ctx, "C0BOOKED", 1000);
    const ahead = await nextPostInMs(h.ctx, "C0BOOKED");
    expect(ahead).toBeGreaterThan(0);
    expect(ahead).toBeLessThanOrEqual(2000);
  });
});
