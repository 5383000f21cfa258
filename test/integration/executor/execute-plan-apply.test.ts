import { describe, expect, it } from "vitest";
import { READ_TOKEN, WRITE_TOKEN } from "../../support/harness.ts";
import { claimOf, execute, fresh, grantFor, mark, merge, propose, seed, target, useExecutorTarget, writesTo } from "./execute-plan-setup.ts";

useExecutorTarget();

describe("executePlan applies what was signed, with the target's precondition", () => {
  it("merge: one PATCH with If-Match, merge-patch content type, idempotency key and the write token", async () => {
    const path = seed({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    const { doc, preview } = await propose([merge(path, { email: "ana@new.example" })]);
    const previewEtag = preview.actions[0]!.version;
    expect(previewEtag).toBe(target.etagOf(path));
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
    const writes = writesTo([path], m);
    expect(writes).toHaveLength(1);
    const [write] = writes;
    expect(write!.method).toBe("PATCH");
    expect(write!.headers["if-match"]).toBe(previewEtag);
    expect(write!.headers["if-none-match"]).toBeUndefined();
    expect(write!.headers["content-type"]).toBe("application/merge-patch+json");
    expect(write!.headers["idempotency-key"]).toBe(`${doc.id}:0`);
    expect(write!.headers.authorization).toBe(`Bearer ${WRITE_TOKEN}`);
    expect(JSON.parse(write!.body)).toStrictEqual({ email: "ana@new.example" });
    expect(target.get(path)).toStrictEqual({ id: 1, name: "Ana Lima", email: "ana@new.example" });
    // The revalidation reads went out with the read credential, never the write one.
    const reads = target.requests.slice(m).filter((r) => r.method === "GET");
    expect(reads.length).toBeGreaterThan(0);
    for (const r of reads) expect(r.headers.authorization).toBe(`Bearer ${READ_TOKEN}`);
  });

  it("replace: one PUT with If-Match and the whole body", async () => {
    const path = seed({ id: 2, name: "Bruno", email: "bruno@old.example", legacy: true });
    const body = { id: 2, name: "Bruno Costa", email: "bruno@example.com" };
    const { doc, preview } = await propose([{ kind: "http.json", target: "crm", path, op: "replace", body }]);
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
    const writes = writesTo([path], m);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.method).toBe("PUT");
    expect(writes[0]!.headers["if-match"]).toBe(preview.actions[0]!.version);
    expect(writes[0]!.headers["if-none-match"]).toBeUndefined();
    expect(writes[0]!.headers["content-type"]).toBe("application/json");
    expect(writes[0]!.headers["idempotency-key"]).toBe(`${doc.id}:0`);
    expect(writes[0]!.headers.authorization).toBe(`Bearer ${WRITE_TOKEN}`);
    expect(JSON.parse(writes[0]!.body)).toStrictEqual(body);
    expect(target.get(path)).toStrictEqual(body);
  });

  it("create: one PUT with If-None-Match: * and no If-Match", async () => {
    const path = fresh();
    const body = { name: "Carla Dias", email: "carla@example.com" };
    const { doc, preview } = await propose([{ kind: "http.json", target: "crm", path, op: "create", body }]);
    expect(doc.actions[0]!.precondition).toStrictEqual({ absent: true });
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
    const writes = writesTo([path], m);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.method).toBe("PUT");
    expect(writes[0]!.headers["if-none-match"]).toBe("*");
    expect(writes[0]!.headers["if-match"]).toBeUndefined();
    expect(writes[0]!.headers["idempotency-key"]).toBe(`${doc.id}:0`);
    expect(writes[0]!.headers.authorization).toBe(`Bearer ${WRITE_TOKEN}`);
    expect(target.get(path)).toStrictEqual(body);
  });

  it("delete: one DELETE with If-Match", async () => {
    const path = seed({ id: 3, name: "Duda" });
    const { doc, preview } = await propose([{ kind: "http.json", target: "crm", path, op: "delete" }]);
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome).toStrictEqual({ status: "applied", actions: [{ index: 0, target: "crm", path, status: "applied", verified: true }] });
    const writes = writesTo([path], m);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.method).toBe("DELETE");
    expect(writes[0]!.headers["if-match"]).toBe(preview.actions[0]!.version);
    expect(writes[0]!.headers["idempotency-key"]).toBe(`${doc.id}:0`);
    expect(writes[0]!.headers.authorization).toBe(`Bearer ${WRITE_TOKEN}`);
    expect(target.get(path)).toBeUndefined();
  });

  it("several actions: each write carries its own index in the idempotency key, in order", async () => {
    const a = seed({ v: 1 }, "a");
    const b = seed({ v: 1 }, "b");
    const { doc, preview } = await propose([merge(a, { v: 2 }), merge(b, { v: 2 })]);
    const m = mark();

    const outcome = await execute(claimOf(doc, preview, await grantFor(doc)));

    expect(outcome.status).toBe("applied");
    expect(outcome.actions.map((x) => x.status)).toStrictEqual(["applied", "applied"]);
    expect(writesTo([a, b], m).map((w) => [w.path, w.headers["idempotency-key"]])).toStrictEqual([
      [a, `${doc.id}:0`],
      [b, `${doc.id}:1`],
    ]);
  });

  it("running the same claim twice writes once: the second run finds the change held and reconciles", async () => {
    const path = seed({ id: 4, email: "old@example.com" });
    const { doc, preview } = await propose([merge(path, { email: "new@example.com" })]);
    const claim = claimOf(doc, preview, await grantFor(doc));
    const m = mark();

    expect((await execute(claim)).status).toBe("applied");
    const second = await execute(claim);

    expect(second).toStrictEqual({
      status: "applied",
      reconciled: true,
      actions: [{ index: 0, target: "crm", path, status: "applied", reconciled: true, verified: true }],
    });
    expect(writesTo([path], m)).toHaveLength(1);
  });
});
