import { describe, expect, it } from "vitest";
import type { TargetConfig } from "../../../src/config/schema.ts";
import type { RecordedRequest } from "../../../src/demo/json-resource-server.ts";
import type { GrantInput } from "../../../src/grant/grant.ts";
import { targetConfig, WRITE_TOKEN } from "../../support/harness.ts";
import { claimOf, execute, grantFor, mark, merge, ports, propose, seed, target, useExecutorTarget, writesTo } from "./execute-plan-setup.ts";

useExecutorTarget();

describe("executePlan on an expired grant only reconciles", () => {
  const expired = (): Partial<GrantInput> => ({ issuedAt: new Date(Date.now() - 1_200_000), expiresAt: new Date(Date.now() - 600_000) });

  it("target not yet changed → expired, zero writes", async () => {
    const path = seed({ id: 1, email: "old@example.com" });
    const { doc, preview } = await propose([merge(path, { email: "new@example.com" })]);
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, expired())));

    expect(outcome.status).toBe("expired");
    expect(outcome.reason).toMatch(/expired/);
    expect(outcome.actions).toStrictEqual([{ index: 0, target: "crm", path, status: "skipped" }]);
    expect(writesTo([path], m)).toHaveLength(0);
    expect(target.get(path)).toStrictEqual({ id: 1, email: "old@example.com" });
  });

  it("target changed by someone else → expired, zero writes", async () => {
    const path = seed({ id: 1, email: "old@example.com" });
    const { doc, preview } = await propose([merge(path, { email: "new@example.com" })]);
    target.set(path, { id: 1, email: "other@example.com" });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, expired())));

    expect(outcome.status).toBe("expired");
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("part of a multi-action plan held, the rest not → expired, zero writes", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 })]);
    target.set(a, { v: 2 });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, expired())));

    expect(outcome.status).toBe("expired");
    expect(writesTo([a, b], m)).toHaveLength(0);
    expect(target.get(b)).toStrictEqual({ v: 1 });
  });

  it("target already holds the change → applied, reconciled, zero writes", async () => {
    const path = seed({ id: 1, email: "old@example.com" });
    const { doc, preview } = await propose([merge(path, { email: "new@example.com" })]);
    target.set(path, { id: 1, email: "new@example.com", updatedAt: "2026-12-02T12:00:00Z" });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, expired())));

    expect(outcome).toStrictEqual({
      status: "applied",
      reconciled: true,
      actions: [{ index: 0, target: "crm", path, status: "applied", reconciled: true, verified: true }],
    });
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("an expired grant that is also bad (wrong audience) is refused, even if the target holds the change", async () => {
    const path = seed({ id: 1, email: "old@example.com" });
    const { doc, preview } = await propose([merge(path, { email: "new@example.com" })]);
    target.set(path, { id: 1, email: "new@example.com" });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, { ...expired(), environment: "staging" })));

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/aud/);
    expect(writesTo([path], m)).toHaveLength(0);
  });
});

describe("executePlan starts a write only while the grant outlasts the target's timeout", () => {
  // A slow target: its timeout is long, and the test holds answers until given moments around the grant's expiry.
  const TIMEOUT_MS = 5000;
  // How long the executor has, from the grant's making, to send its first write (grant check and
  // the revalidating GETs first): 1 s is not always enough under CI's own load, where a stall
  // can see the first write refused too. A held answer waits about this long plus 300 ms,
  // which must stay well inside the target's timeout, or the held write fails instead.
  const START_BUDGET_MS = 2500;
  const slow = (): Record<string, TargetConfig> => ({
    crm: targetConfig(target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } }, timeoutMs: TIMEOUT_MS }),
  });
  const holdUntil = (at: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
  /** Write requests to these paths that arrived at or after `at`. */
  const writesFrom = (paths: string[], m: number, arrived: Map<RecordedRequest, number>, at: number) => writesTo(paths, m).filter((w) => arrived.get(w)! >= at);

  it("a grant that expires during retries: no write after the re-read that used up the time, expired, nothing written", async () => {
    const a = seed({ v: 1 }, "a");
    const configured = slow();
    const { doc, preview } = await propose([merge(a, { v: 2 })], configured);
    const expiresAt = Date.now() + TIMEOUT_MS + START_BUDGET_MS;
    const arrived = new Map<RecordedRequest, number>();
    let failedWrites = 0;
    target.beforeHandle = async (r) => {
      arrived.set(r, Date.now());
      target.failWith = undefined;
      if (r.method === "PATCH") {
        failedWrites++;
        target.failWith = { status: 503, body: "busy" };
      } else if (failedWrites > 0) {
        // The re-read before a retry answers late: first when less than the target's timeout is left, then after expiry.
        await holdUntil(failedWrites === 1 ? expiresAt - TIMEOUT_MS + 300 : expiresAt + 100);
      }
    };
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, { expiresAt: new Date(expiresAt) })), ports({}, configured));

    expect(writesFrom([a], m, arrived, expiresAt)).toStrictEqual([]);
    expect(outcome.status).toBe("expired");
    expect(outcome.partial).toBeUndefined();
    expect(outcome.reason).toMatch(/grant expired before action 0 could be written.*nothing was written/);
    expect(outcome.actions).toStrictEqual([
      {
        index: 0,
        target: "crm",
        path: a,
        status: "skipped",
        detail: expect.stringMatching(/HTTP 503.*not tried again: the grant expires in \d+ ms, within the target's timeout \(5000 ms\)/),
      },
    ]);
    expect(target.get(a)).toStrictEqual({ v: 1 });
  });

  it("a later action of a plan is checked too: an earlier write that used up the time stops the plan, expired and partial", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const c = seed({ v: 1 }, "c");
    const configured = slow();
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 }), merge(c, { v: 2 })], configured);
    const expiresAt = Date.now() + TIMEOUT_MS + START_BUDGET_MS;
    const arrived = new Map<RecordedRequest, number>();
    target.beforeHandle = async (r) => {
      arrived.set(r, Date.now());
      // a answers when less than the target's timeout is left; b (if sent) answers after expiry.
      if (r.method === "PATCH" && r.path === a) await holdUntil(expiresAt - TIMEOUT_MS + 300);
      if (r.method === "PATCH" && r.path === b) await holdUntil(expiresAt + 100);
    };
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, { expiresAt: new Date(expiresAt) })), ports({}, configured));

    expect(writesFrom([a, b, c], m, arrived, expiresAt)).toStrictEqual([]);
    expect(writesTo([a, b, c], m).map((w) => w.path)).toStrictEqual([a]);
    expect(outcome.status).toBe("expired");
    expect(outcome.partial).toBe(true);
    expect(outcome.reason).toMatch(/grant expired before action 1 could be written.*the actions before it were written/);
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["applied", "skipped", "skipped"]);
    expect(outcome.actions[1]!.detail).toMatch(/^the grant expires in \d+ ms, within the target's timeout/);
    expect([target.get(a), target.get(b), target.get(c)]).toStrictEqual([{ v: 2 }, { v: 1 }, { v: 1 }]);
  });
});
