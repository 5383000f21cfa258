import { describe, expect, it } from "vitest";
import type { TargetConfig } from "../../../src/config/schema.ts";
import { JsonResourceServer } from "../../../src/demo/json-resource-server.ts";
import { READ_TOKEN, targetConfig, WRITE_TOKEN } from "../../support/harness.ts";
import { claimOf, execute, fresh, grantFor, mark, merge, ports, propose, seed, target, targets, useExecutorTarget, writesTo } from "./execute-plan-setup.ts";

useExecutorTarget();

describe("executePlan revalidates before writing", () => {
  it("target changed between preview and execution → stale, zero writes, with expected/now and what changed", async () => {
    const path = seed({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    const { doc, preview } = await propose([merge(path, { email: "ana@new.example" })]);
    const expected = preview.actions[0]!.version;
    target.set(path, { id: 1, name: "Ana L. Lima", email: "ana@old.example" });
    const now = target.etagOf(path);
    expect(now).not.toBe(expected);
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("stale");
    expect(outcome.partial).toBeUndefined();
    expect(outcome.reason).toMatch(/changed since the preview/);
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "crm",
        path,
        status: "stale",
        detail: expect.stringContaining(path),
        expected,
        now,
        changedSincePreview: [{ path: "/name", from: "Ana Lima", to: "Ana L. Lima" }],
      },
    ]);
    expect(writesTo([path], m)).toHaveLength(0);
    expect(target.get(path)).toStrictEqual({ id: 1, name: "Ana L. Lima", email: "ana@old.example" });
  });

  it("a resource deleted since the preview → stale, now: null, zero writes", async () => {
    const path = seed({ id: 1, name: "Ana" });
    const { doc, preview } = await propose([merge(path, { name: "Ana Lima" })]);
    const grant = await grantFor(doc);
    const m0 = mark();
    // Someone deleted it: DELETE through the target itself, then forget that request.
    await fetch(new URL(path, target.url), { method: "DELETE", headers: { authorization: `Bearer ${WRITE_TOKEN}` } });
    expect(target.get(path)).toBeUndefined();
    const m = mark();
    expect(m).toBe(m0 + 1);

    const outcome = await execute(claimOf(doc, preview, grant));

    expect(outcome.status).toBe("stale");
    expect(outcome.actions[0]).toMatchObject({
      status: "stale",
      expected: preview.actions[0]!.version,
      now: null,
      changedSincePreview: [{ path: "", from: { id: 1, name: "Ana" } }],
    });
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("create, but someone created the resource since → stale (expected: null), zero writes", async () => {
    const path = fresh();
    const { doc, preview } = await propose([{ kind: "http.json", target: "crm", path, op: "create", body: { name: "Carla" } }]);
    target.set(path, { name: "Someone else" });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("stale");
    expect(outcome.actions[0]).toMatchObject({ status: "stale", expected: null, now: target.etagOf(path) });
    expect(writesTo([path], m)).toHaveLength(0);
    expect(target.get(path)).toStrictEqual({ name: "Someone else" });
  });

  it("one stale action among several → the whole plan is stale and nothing is written, not even the actions before it", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const c = seed({ v: 1 }, "c");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 }), merge(c, { v: 2 })]);
    target.set(c, { v: 1, note: "edited" });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("stale");
    expect(outcome.partial).toBeUndefined();
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["skipped", "skipped", "stale"]);
    expect(writesTo([a, b, c], m)).toHaveLength(0);
    expect(target.get(a)).toStrictEqual({ v: 1 });
  });

  it("target already holds the change under another ETag (applied by someone, plus a field of its own) → applied, reconciled, zero writes", async () => {
    const path = seed({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    const { doc, preview } = await propose([merge(path, { email: "ana@new.example" })]);
    target.set(path, { id: 1, name: "Ana Lima", email: "ana@new.example", updatedAt: "2026-12-02T12:00:00Z" });
    expect(target.etagOf(path)).not.toBe(preview.actions[0]!.version);
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({
      status: "applied",
      reconciled: true,
      actions: [{ index: 0, target: "crm", path, status: "applied", reconciled: true, verified: true }],
    });
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("some actions already held, the rest still at the preview's version → writes only the rest", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 })]);
    target.set(a, { v: 2, touched: true });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("applied");
    expect(outcome.reconciled).toBeUndefined();
    expect(outcome.actions).toStrictEqual([
      { index: 0, target: "crm", path: a, status: "applied", reconciled: true, verified: true },
      { index: 1, target: "crm", path: b, status: "applied", verified: true },
    ]);
    expect(writesTo([a, b], m).map((w) => [w.method, w.path, w.headers["idempotency-key"]])).toStrictEqual([["PATCH", b, `${doc.id}:1`]]);
  });

  it("target unreachable during revalidation → failed, zero writes anywhere", async () => {
    const live = seed({ v: 1 }, "live");
    const down = new JsonResourceServer({ readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN, seed: { "/x": { v: 1 } } });
    const downUrl = await down.start();
    const withDown: Record<string, TargetConfig> = {
      ...targets,
      down: targetConfig(downUrl, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }),
    };
    let proposal: Awaited<ReturnType<typeof propose>>;
    try {
      proposal = await propose([merge(live, { v: 2 }), { kind: "http.json", target: "down", path: "/x", op: "merge", body: { v: 2 } }], withDown);
    } finally {
      await down.stop();
    }
    const { doc, preview } = proposal;
    const downRequests = down.requests.length;
    const m = mark();

    // Unreachable is transient: retried for the first half of the (short) lease, then reported.
    const outcome = await execute(claimOf(doc, preview, await grantFor(doc), 3000), ports({}, withDown));

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/could not re-read action 1/);
    expect(outcome.reason).toMatch(/'down' is unreachable.*\(after [2-9] attempts\)/);
    expect(outcome.actions).toStrictEqual([
      { index: 0, target: "crm", path: live, status: "skipped" },
      { index: 1, target: "down", path: "/x", status: "failed", detail: expect.stringMatching(/unreachable/) },
    ]);
    expect(writesTo([live], m)).toHaveLength(0);
    expect(target.get(live)).toStrictEqual({ v: 1 });
    expect(down.requests.length).toBe(downRequests);
  });

  it("target answering 503 to every re-read → retried within the lease, then failed, zero writes", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      if (r.method === "GET" && r.path === path) target.failWith = { status: 503, body: "maintenance" };
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc), 3000));

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/HTTP 503/);
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["failed"]);
    expect(writesTo([path], m)).toHaveLength(0);
    expect(target.requests.slice(m).filter((r) => r.method === "GET").length).toBeGreaterThan(1);
  });

  it("a 503 to the first re-read only → retried, then applied once", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const m = mark();
    let failed = 0;
    target.beforeHandle = (r) => {
      // failWith answers every request until cleared: set it for this one only.
      target.failWith = r.method === "GET" && r.path === path && failed++ === 0 ? { status: 503, body: "maintenance" } : undefined;
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
    expect(writesTo([path], m)).toHaveLength(1);
    expect(target.get(path)).toStrictEqual({ v: 2 });
  });

  it("a 403 to the re-read is permanent → failed at once, one read, zero writes", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      if (r.method === "GET" && r.path === path) target.failWith = { status: 403, body: "read token revoked" };
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/could not re-read action 0: .*HTTP 403/);
    expect(outcome.reason).not.toMatch(/attempts/);
    expect(target.requests.slice(m).filter((r) => r.path === path)).toHaveLength(1);
  });

  it("an action of a kind its target's adapter is not → failed naming both kinds, zero writes", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const m = mark();
    const real = ports();
    const renamed = ports({ target: (name) => ({ ...real.target(name), adapter: { ...real.target(name).adapter, kind: "postgres.row" } }) });
    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)), renamed);

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/action 0 is a 'http.json' action, but target 'crm' is a 'postgres.row' target/);
    expect(writesTo([path], m)).toHaveLength(0);
  });
});

describe("executePlan: a target document that cannot be hashed exactly is a permanent failure, not a retry", () => {
  it("a lone surrogate appeared in the target since the preview → failed, naming where, zero writes", async () => {
    const path = seed({ name: "Ana" });
    const { doc, preview } = await propose([merge(path, { name: "Ana Lima" })]);
    target.set(path, { name: "Ana", note: "bad \uD800 text" });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/could not re-read action 0: .*cannot be hashed exactly: at \/note, the string contains a lone UTF-16 surrogate/);
    expect(outcome.actions.map((a) => a.status)).toStrictEqual(["failed"]);
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("the target now answers with a number a double cannot hold → failed, naming the number, zero writes", async () => {
    const path = seed({ balance: 10 });
    const { doc, preview } = await propose([merge(path, { balance: 11 })]);
    const m = mark();
    target.beforeHandle = (r) => {
      if (r.method === "GET" && r.path === path) target.failWith = { status: 200, body: '{"balance": 12345678901234567890}' };
    };

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/at \/balance, the number 12345678901234567890 cannot be held exactly \(it would read as 12345678901234567000\)/);
    expect(writesTo([path], m)).toHaveLength(0);
  });
});
