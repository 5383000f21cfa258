import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { previewHttpJson } from "../../src/adapters/http-json.ts";
import { createReadOnlyHttp } from "../../src/adapters/read-only-http.ts";
import type { TargetConfig } from "../../src/config/schema.ts";
import { JsonResourceServer, type RecordedRequest } from "../../src/demo/json-resource-server.ts";
import { executePlan, type ExecutionPorts } from "../../src/executor/execute-plan.ts";
import { type Claim } from "../../src/contract/executor-api.ts";
import { issueGrant, type GrantInput } from "../../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, type SigningKey, type VerifyingKeys } from "../../src/grant/keys.ts";
import { fingerprint } from "../../src/plan/fingerprint.ts";
import type { Json } from "../../src/plan/json.ts";
import { Outcome } from "../../src/plan/outcome.ts";
import { PlanDocument, type HttpJsonAction, type HttpJsonPlanned } from "../../src/plan/schema.ts";
import { type ActionPreview } from "../../src/contract/agent-api.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { ReportRefused, type ExecutorServer } from "../../src/executor/server-client.ts";
import { executionPorts } from "../support/execution-ports.ts";
import { READ_TOKEN, silentLogger, targetConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { waitFor } from "../support/wait-for.ts";

const http = createReadOnlyHttp();

let target: JsonResourceServer;
let keys: { signing: SigningKey; verifying: VerifyingKeys };
let otherKey: SigningKey;
let targets: Record<string, TargetConfig>;

beforeAll(async () => {
  target = new JsonResourceServer({ readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
  await target.start();
  targets = { crm: targetConfig(target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) };
  keys = await testGrantKeys();
  otherKey = await loadSigningKey((await generateGrantKeys()).privatePem);
});

afterAll(async () => {
  await target.stop();
});

beforeEach(() => {
  target.beforeHandle = undefined;
  target.failWith = undefined;
});

/** A path of its own for each test: the target lives for the whole file. */
let counter = 0;
type HttpJsonRequest = z.output<typeof HttpJsonAction>;

const fresh = (name = "contacts"): string => `/t${++counter}/${name}`;

/** Seeds a resource and returns its path. */
function seed(body: Json, name?: string): string {
  const path = fresh(name);
  target.set(path, body);
  return path;
}

function merge(path: string, body: Json): HttpJsonRequest {
  return { kind: "http.json", target: "crm", path, op: "merge", body };
}

/** Builds the plan document and preview the way the server does: preview with read-only HTTP. */
async function propose(
  actions: HttpJsonRequest[],
  previewTargets: Record<string, TargetConfig> = targets,
): Promise<{ doc: PlanDocument; preview: { actions: ActionPreview[] } }> {
  const previews = [];
  for (const action of actions) previews.push(await previewHttpJson(http, previewTargets[action.target]!, action));
  const doc = PlanDocument.parse({
    v: 1,
    id: randomUUID(),
    environment: "test",
    agent: "agent-test",
    title: "Executor test plan",
    actions: previews.map((p) => p.planned),
    policy: { approvers: ["U0ALICE", "U0BOB"], requiredApprovals: 1, grantTtlSeconds: 600 },
    expiresAt: new Date(Date.now() + 900_000).toISOString(),
  });
  return { doc, preview: { actions: previews.map((p) => p.preview) } };
}

async function grantFor(doc: PlanDocument, overrides: Partial<GrantInput> = {}, signing: SigningKey = keys.signing): Promise<string> {
  const now = new Date();
  const { token } = await issueGrant(signing, {
    planId: doc.id,
    planHash: fingerprint(doc),
    approvers: [{ user: "U0ALICE", via: "slack", at: now.toISOString() }],
    environment: "test",
    issuedAt: now,
    expiresAt: new Date(now.getTime() + 600_000),
    ...overrides,
  });
  return token;
}

/** A claim as the server hands it out; a short lease makes the executor give up on transient errors sooner. */
function claimOf(doc: PlanDocument, preview: { actions: ActionPreview[] }, grant: string, leaseMs = 60_000): Claim {
  return { plan: doc, preview, grant, claimToken: randomUUID(), leaseExpiresAt: new Date(Date.now() + leaseMs).toISOString() };
}

/** The targets opened through the built-in adapters, as runExecutor does (http.json holds nothing open). */
function ports(overrides: Partial<ExecutionPorts> = {}, configured: Record<string, TargetConfig> = targets): ExecutionPorts {
  return { ...executionPorts(keys.verifying, configured), ...overrides };
}

/** Runs the executor and checks that what it reports is a valid outcome for the server. */
async function execute(claim: Claim, p: ExecutionPorts = ports()): Promise<Outcome> {
  const outcome = await executePlan(claim, p);
  expect(Outcome.parse(outcome)).toStrictEqual(outcome);
  return outcome;
}

/** Every write the target received at these paths since `mark` (an index into target.requests). */
function writesTo(paths: string[], mark = 0): RecordedRequest[] {
  return target.requests.slice(mark).filter((r) => r.method !== "GET" && r.method !== "HEAD" && paths.includes(r.path));
}

const mark = (): number => target.requests.length;

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

describe("executePlan writes nothing on a bad grant or a plan that is not the one approved", () => {
  type Setup = { doc: PlanDocument; preview: { actions: ActionPreview[] } };
  const cases: [string, RegExp, (s: Setup) => Promise<Claim>][] = [
    ["grant for another environment (audience)", /aud/, async ({ doc, preview }) => claimOf(doc, preview, await grantFor(doc, { environment: "staging" }))],
    ["grant signed by another key", /unknown key/, async ({ doc, preview }) => claimOf(doc, preview, await grantFor(doc, {}, otherKey))],
    [
      "grant whose planHash was tampered with (payload re-encoded, signature kept)",
      /signature verification failed/,
      async (s) => {
        const altered = structuredClone(s.doc);
        (altered.actions[0] as HttpJsonPlanned).body = { email: "mallory@evil.example" };
        const [h, p, sig] = (await grantFor(s.doc)).split(".");
        const payload = JSON.parse(Buffer.from(p!, "base64url").toString()) as Record<string, unknown>;
        payload.planHash = fingerprint(altered);
        return claimOf(altered, s.preview, `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`);
      },
    ],
    [
      "plan document altered after approval (body changed, grant kept)",
      /altered after approval/,
      async (s) => {
        const grant = await grantFor(s.doc);
        const altered = structuredClone(s.doc);
        (altered.actions[0] as HttpJsonPlanned).body = { email: "mallory@evil.example" };
        return claimOf(altered, s.preview, grant);
      },
    ],
    [
      "plan document altered after approval (policy approvers changed, grant kept)",
      /altered after approval/,
      async (s) => {
        const grant = await grantFor(s.doc);
        const altered = structuredClone(s.doc);
        altered.policy.approvers = ["U0MALLORY"];
        return claimOf(altered, s.preview, grant);
      },
    ],
    [
      "grant for another plan id (sub) with this plan's hash",
      /grant is for plan/,
      async ({ doc, preview }) => claimOf(doc, preview, await grantFor(doc, { planId: randomUUID() })),
    ],
    [
      "preview after-state that does not match the approved digest",
      /preview of action 0 does not match/,
      async ({ doc, preview }) => {
        const forged = structuredClone(preview);
        forged.actions[0]!.after = { id: 1, name: "Ana Lima", email: "ana@old.example" };
        return claimOf(doc, forged, await grantFor(doc));
      },
    ],
    [
      "preview before-state that does not match the approved digest",
      /preview of action 0 does not match/,
      async ({ doc, preview }) => {
        const forged = structuredClone(preview);
        forged.actions[0]!.before = { id: 1, name: "Ana Lima", email: "ana@new.example" };
        return claimOf(doc, forged, await grantFor(doc));
      },
    ],
    ["preview missing", /preview of action 0 does not match/, async ({ doc }) => claimOf(doc, { actions: [] }, await grantFor(doc))],
    [
      "alg: none token with the right claims",
      /alg/i,
      async ({ doc, preview }) => {
        const [, p] = (await grantFor(doc)).split(".");
        const header = Buffer.from(JSON.stringify({ alg: "none", kid: keys.signing.kid, typ: "countersign-grant+jwt" })).toString("base64url");
        return claimOf(doc, preview, `${header}.${p}.`);
      },
    ],
  ];

  it.each(cases)("%s → failed, zero writes", async (_name, reason, makeClaim) => {
    const path = seed({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    const setup = await propose([merge(path, { email: "ana@new.example" })]);
    const claim = await makeClaim(setup);
    const m = mark();

    const outcome = await execute(claim);

    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(reason);
    expect(outcome.actions).toStrictEqual([{ index: 0, target: "crm", path, status: "skipped" }]);
    expect(writesTo([path], m)).toHaveLength(0);
    expect(target.get(path)).toStrictEqual({ id: 1, name: "Ana Lima", email: "ana@old.example" });
    // The same plan with a proper grant would have been written: the refusal is the grant's doing.
    const good = await execute(claimOf(setup.doc, setup.preview, await grantFor(setup.doc)));
    expect(good.status).toBe("applied");
    expect(writesTo([path], m)).toHaveLength(1);
  });

  it("a bad grant is refused and nothing is written, though the first action's read ran during the grant check", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 }), merge(path, { v: 3 })]);
    const m = mark();
    const outcome = await execute(claimOf(doc, preview, await grantFor(doc, {}, otherKey)));
    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/grant/);
    expect(outcome.actions.map((a) => a.status)).toStrictEqual(["skipped", "skipped"]);
    // The read is sent before the grant is verified (it overlaps the check); it is the only request.
    await waitFor("the read sent during the grant check", () => target.requests.length > m);
    expect(target.requests.slice(m).map((r) => r.method)).toStrictEqual(["GET"]);
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("a bad grant with an action whose target is not configured reaches no target", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const m = mark();
    const opened: string[] = [];
    const outcome = await execute(
      claimOf(doc, preview, await grantFor(doc, {}, otherKey)),
      ports({
        target: (name) => {
          opened.push(name);
          throw new Error("must not reach a target");
        },
      }),
    );
    expect(outcome.status).toBe("failed");
    expect(outcome.reason).toMatch(/grant/);
    expect(target.requests.length).toBe(m);
  });
});

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
  // the revalidating GETs first): 1 s was not always enough under CI's own load (a stop on
  // 2026-12-04 saw the first write refused too). A held answer waits about this long plus 300 ms,
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

describe("runExecutor: a report the server refuses for good is not resent forever", () => {
  /** A real ExecutorServer in memory: hands out one claim, then none; answers reports as the test says. */
  function oneClaimServer(claim: Claim, answerReport: (n: number, outcome: Outcome) => boolean | Error) {
    const reports: Outcome[] = [];
    let claims = 0;
    const server: ExecutorServer = {
      async claim(signal) {
        claims++;
        if (claims === 1) return claim;
        await new Promise((resolve) => (signal?.aborted ? resolve(undefined) : signal?.addEventListener("abort", resolve, { once: true })));
        return undefined;
      },
      heartbeat: async () => true,
      async report(_token, outcome) {
        reports.push(outcome);
        const answer = answerReport(reports.length, outcome);
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
    return { server, reports, claims: () => claims };
  }

  async function claimFor(): Promise<Claim> {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    return claimOf(doc, preview, await grantFor(doc));
  }

  it("a 4xx to the full report → the minimal report once; accepted, and the executor moves on", async () => {
    const fake = oneClaimServer(await claimFor(), (n) => (n === 1 ? new ReportRefused(400, '{"error":{"code":"invalid_request"}}') : true));
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to ask for its next claim", () => fake.claims() >= 2);
    } finally {
      await executor.stop();
    }
    expect(fake.reports).toHaveLength(2);
    expect(fake.reports[0]!.status).toBe("applied");
    expect(fake.reports[1]).toMatchObject({ status: "applied", reason: expect.stringMatching(/the server refused the full report: .*HTTP 400/) });
  });

  it("a 4xx to the minimal report too → logged and left: exactly two reports, then the next claim", async () => {
    const fake = oneClaimServer(await claimFor(), () => new ReportRefused(422, "nope"));
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to ask for its next claim", () => fake.claims() >= 2);
    } finally {
      await executor.stop();
    }
    expect(fake.reports).toHaveLength(2);
  });

  it("stopped while waiting to retry a transient failure: stop returns at once, nothing is reported or written, the plan is left to its lease", async () => {
    const path = seed({ v: 1 });
    const { doc, preview } = await propose([merge(path, { v: 2 })]);
    const fake = oneClaimServer(claimOf(doc, preview, await grantFor(doc)), () => true);
    const m = mark();
    target.beforeHandle = (r) => {
      target.failWith = r.method === "GET" && r.path === path ? { status: 503, body: "maintenance" } : undefined;
    };
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to retry the re-read", () => target.requests.slice(m).filter((r) => r.path === path).length >= 2);
    } finally {
      const stopping = performance.now();
      await executor.stop();
      // The lease (60 s) leaves 30 s of retries; stopping does not wait them out.
      expect(performance.now() - stopping).toBeLessThan(20_000);
    }
    expect(fake.reports).toStrictEqual([]);
    expect(writesTo([path], m)).toHaveLength(0);
  });

  it("a transient failure (5xx, network) is retried until the server takes the report", async () => {
    const fake = oneClaimServer(await claimFor(), (n) => (n < 3 ? new Error("server answered HTTP 503") : true));
    const executor = runExecutor({ server: fake.server, keys: keys.verifying, environment: "test", targets, logger: silentLogger });
    try {
      await waitFor("the executor to ask for its next claim", () => fake.claims() >= 2);
    } finally {
      await executor.stop();
    }
    expect(fake.reports).toHaveLength(3);
    expect(fake.reports.map((r) => r.status)).toStrictEqual(["applied", "applied", "applied"]);
    expect(fake.reports[2]!.reason).toBeUndefined();
  });
});
