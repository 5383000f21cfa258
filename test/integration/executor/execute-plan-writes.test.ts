import { describe, expect, it } from "vitest";
import { claimOf, execute, grantFor, mark, merge, propose, seed, target, useExecutorTarget, writesTo } from "./execute-plan-setup.ts";

useExecutorTarget();

describe("executePlan stops at the first write that does not apply", () => {
  it("the target answers 412 to the second write → stale, partial, [applied, stale, skipped], third never sent", async () => {
    const a = seed({ id: "a", v: 1 }, "a");
    const b = seed({ id: "b", v: 1 }, "b");
    const c = seed({ id: "c", v: 1 }, "c");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 }), merge(c, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      // Someone edits /b between our revalidation and our write: its If-Match no longer matches.
      if (r.method === "PATCH" && r.path === b) target.set(b, { id: "b", v: 1, editedBy: "someone" });
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("stale");
    expect(outcome.partial).toBe(true);
    expect(outcome.reason).toMatch(/412/);
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["applied", "stale", "skipped"]);
    expect(outcome.actions[1]).toMatchObject({ index: 1, path: b, detail: expect.stringMatching(/HTTP 412/) });
    const writes = writesTo([a, b, c], m);
    expect(writes.map((w) => [w.method, w.path, w.headers["idempotency-key"]])).toStrictEqual([
      ["PATCH", a, `${doc.id}:0`],
      ["PATCH", b, `${doc.id}:1`],
    ]);
    expect(writes[1]!.headers["if-match"]).toBe(preview.actions[1]!.version);
    expect(target.get(a)).toStrictEqual({ id: "a", v: 2 });
    expect(target.get(b)).toStrictEqual({ id: "b", v: 1, editedBy: "someone" });
    expect(target.get(c)).toStrictEqual({ id: "c", v: 1 });
  });

  it("the target answers 500 to the second write → failed, partial, later actions skipped and not sent", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const c = seed({ v: 1 }, "c");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 }), merge(c, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      // failWith answers every request until cleared: the re-reads before each retry are answered.
      target.failWith = r.method !== "GET" && r.path === b ? { status: 500, body: "database on fire" } : undefined;
    };

    // A 500 is transient: retried (after a re-read each time) for the first half of the short lease.
    const outcome = await execute(claimOf(doc, preview, await grantFor(doc), 3000));

    expect(outcome.status).toBe("failed");
    expect(outcome.partial).toBe(true);
    expect(outcome.reason).toMatch(/HTTP 500/);
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["applied", "failed", "skipped"]);
    expect(outcome.actions[1]!.detail).toMatch(/HTTP 500.*database on fire.*\(after [2-9] attempts\)/);
    const writes = writesTo([a, b, c], m).map((w) => w.path);
    expect(writes[0]).toBe(a);
    expect(writes.slice(1).length).toBeGreaterThan(1);
    expect(new Set(writes.slice(1))).toStrictEqual(new Set([b]));
    expect(target.get(c)).toStrictEqual({ v: 1 });
  });

  it("a 400 to a write is permanent → failed at once: one write, no retry", async () => {
    const a = seed({ v: 1 }, "a");
    const { doc, preview } = await propose([merge(a, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      if (r.method !== "GET" && r.path === a) target.failWith = { status: 400, body: "no such field" };
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("failed");
    expect(outcome.actions[0]).toStrictEqual({ index: 0, target: "crm", path: a, status: "failed", detail: expect.stringMatching(/HTTP 400.*no such field$/) });
    expect(writesTo([a], m)).toHaveLength(1);
  });

  it("a 503 to the first write only → re-read (still at the preview's version), written again: applied, verified", async () => {
    const a = seed({ v: 1 }, "a");
    const { doc, preview } = await propose([merge(a, { v: 2 })]);
    const m = mark();
    let refused = 0;
    target.beforeHandle = (r) => {
      target.failWith = r.method === "PATCH" && r.path === a && refused++ === 0 ? { status: 503, body: "busy" } : undefined;
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({
      status: "applied",
      actions: [
        { index: 0, target: "crm", path: a, status: "applied", verified: true, detail: expect.stringMatching(/^written after a failed attempt \(.*HTTP 503/) },
      ],
    });
    expect(writesTo([a], m)).toHaveLength(2);
    expect(target.get(a)).toStrictEqual({ v: 2 });
  });

  it("a write that landed but was answered 500 → the re-read before retrying finds it held: applied, no second write", async () => {
    const a = seed({ v: 1 }, "a");
    const { doc, preview } = await propose([merge(a, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      target.failWith = undefined;
      if (r.method === "PATCH" && r.path === a) {
        target.set(a, { v: 2 });
        target.failWith = { status: 500, body: "wrote it, then fell over" };
      }
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("applied");
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "crm",
        path: a,
        status: "applied",
        verified: true,
        detail: expect.stringMatching(/HTTP 500.*re-read before trying again: the target holds the change/),
      },
    ]);
    expect(writesTo([a], m)).toHaveLength(1);
  });

  it("the target answers 500 to the first write → failed, not partial, nothing after it sent", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      if (r.method !== "GET" && r.path === a) target.failWith = { status: 500, body: "boom" };
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc), 3000));

    expect(outcome.status).toBe("failed");
    expect(outcome.partial).toBeUndefined();
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["failed", "skipped"]);
    expect(new Set(writesTo([a, b], m).map((w) => w.path))).toStrictEqual(new Set([a]));
  });
});
