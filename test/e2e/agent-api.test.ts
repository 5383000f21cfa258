import { beforeAll, describe, expect, it } from "vitest";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { fingerprint } from "../../src/plan/fingerprint.ts";
import { databaseKinds } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { mergeRequest, READ_TOKEN, targetConfig, testConfig, WRITE_TOKEN } from "../support/harness.ts";

/** The agent API over real HTTP, against a real target server that records every request. */
describe.each(databaseKinds)("agent API over HTTP on $name", (kind) => {
  /** The server's clock runs this far ahead of the real one. */
  let clockOffsetMs = 0;
  const s = useServer(kind, {
    seed: { "/contacts/1": { id: 1, email: "ana@old.example" }, "/contacts/2": { id: 2, email: "b@example.com" } },
    run: { sweepMs: 100, clock: () => new Date(Date.now() + clockOffsetMs) },
  });
  let key: string;
  let otherKey: string;

  const call = (method: string, path: string, init: { body?: string | object; key?: string | null; headers?: Record<string, string> } = {}) =>
    fetch(s.server.url + path, {
      method,
      headers: {
        ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? key}` }),
        "content-type": "application/json",
        ...init.headers,
      },
      ...(init.body !== undefined ? { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) } : {}),
    });
  const submit = (body: object, k?: string) => call("POST", "/v1/plans", { body, ...(k ? { key: k } : {}) });

  beforeAll(async () => {
    key = (await addAgent(s.server.ctx, { name: "e2e-agent" })).key;
    otherKey = (await addAgent(s.server.ctx, { name: "e2e-other" })).key;
  });

  it("creates a plan (201) whose preview only ever sent GETs with the read credential", async () => {
    s.target.requests.length = 0;
    const res = await submit(mergeRequest());
    expect(res.status).toBe(201);
    const plan = (await res.json()) as {
      id: string;
      hash: string;
      status: string;
      reviewUrl: string;
      plan: unknown;
      preview: { actions: { changes: unknown[]; version: string }[] };
    };
    expect(plan.status).toBe("pending");
    expect(plan.hash).toBe(fingerprint(plan.plan));
    expect(plan.reviewUrl).toBe(`http://countersign.test/plans/${plan.id}`);
    expect(plan.preview.actions[0]!.changes).toEqual([{ path: "/email", from: "ana@old.example", to: "ana@new.example" }]);
    expect(plan.preview.actions[0]!.version).toBe(s.target.etagOf("/contacts/1"));
    expect(s.target.requests.length).toBeGreaterThan(0);
    for (const request of s.target.requests) {
      expect(request.method).toBe("GET");
      expect(request.headers.authorization).toBe(`Bearer ${READ_TOKEN}`);
      expect(JSON.stringify(request.headers)).not.toContain(WRITE_TOKEN);
    }
    expect(s.target.writes()).toEqual([]);
  });

  it("reads a plan back, with approvals, and lists its audit events", async () => {
    const plan = (await (
      await submit(mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { email: "new@b.example" } }] }))
    ).json()) as { id: string; hash: string };
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    const got = (await (await call("GET", `/v1/plans/${plan.id}`)).json()) as { status: string; approvals: { userId: string; via: string }[] };
    expect(got.status).toBe("approved");
    expect(got.approvals).toMatchObject([{ userId: "U0ALICE", via: "web" }]);
    const events = (await (await call("GET", `/v1/plans/${plan.id}/events`)).json()) as { events: { type: string }[] };
    expect(events.events.map((e) => e.type)).toEqual(["plan.submitted", "decision.approve", "plan.approved"]);
  });

  it("long-polls until a decision arrives, and times out with the plan as it is", async () => {
    const plan = (await (await submit(mergeRequest({ title: "wait for me" }))).json()) as { id: string; hash: string };
    const timedOut = (await (await call("GET", `/v1/plans/${plan.id}/wait?timeout=0.2`)).json()) as { status: string };
    expect(timedOut.status).toBe("pending");
    const waiting = call("GET", `/v1/plans/${plan.id}/wait?timeout=30`);
    await new Promise((r) => setTimeout(r, 100));
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "slack" }, verdict: "reject", reason: "wrong customer" });
    const decided = (await (await waiting).json()) as { status: string; rejection: { reason: string } };
    expect(decided.status).toBe("rejected");
    expect(decided.rejection.reason).toBe("wrong customer");
  });

  it("lets an agent cancel its own pending plan, and nobody else's", async () => {
    const plan = (await (await submit(mergeRequest({ title: "cancel me" }))).json()) as { id: string };
    expect((await call("POST", `/v1/plans/${plan.id}/cancel`, { key: otherKey })).status).toBe(404);
    const cancelled = await call("POST", `/v1/plans/${plan.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as { status: string }).status).toBe("cancelled");
    const again = await call("POST", `/v1/plans/${plan.id}/cancel`);
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("already_decided");
  });

  it("expires an undecided plan by itself", async () => {
    const plan = (await (await submit(mergeRequest({ title: "expire me", ttlSeconds: 10 }))).json()) as { id: string };
    // The sweeper runs every 100 ms here; move the server's clock past the plan's 10 s.
    clockOffsetMs += 11_000;
    const done = (await (await call("GET", `/v1/plans/${plan.id}/wait?timeout=10`)).json()) as { status: string };
    expect(done.status).toBe("expired");
  });

  it("answers idempotent retries with the same plan and refuses a different body under the same key", async () => {
    const body = mergeRequest({ title: "idempotent", idempotencyKey: "key-1" });
    const first = await submit(body);
    const second = await submit(body);
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(((await second.json()) as { id: string }).id).toBe(((await first.json()) as { id: string }).id);
    const conflict = await submit({ ...body, title: "something else" });
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { error: { code: string } }).error.code).toBe("idempotency_conflict");
  });

  describe("bad input gets a clear error and the server keeps serving", () => {
    const cases: { name: string; send: () => Promise<Response>; status: number; code: string; issuePath?: string }[] = [
      { name: "malformed JSON", send: () => call("POST", "/v1/plans", { body: '{"title": ' }), status: 400, code: "invalid_json" },
      { name: "wrong type", send: () => submit(mergeRequest({ title: 42 })), status: 400, code: "invalid_request", issuePath: "/title" },
      { name: "unknown field", send: () => submit(mergeRequest({ dryRun: true })), status: 400, code: "invalid_request", issuePath: "/dryRun" },
      {
        name: "21 actions",
        send: () =>
          submit(mergeRequest({ actions: Array.from({ length: 21 }, (_, i) => ({ kind: "http.json", target: "crm", path: `/c/${i}`, op: "delete" })) })),
        status: 400,
        code: "invalid_request",
        issuePath: "/actions",
      },
      {
        name: "nesting deeper than 32",
        send: () => {
          let body: unknown = "leaf";
          for (let i = 0; i < 40; i++) body = { d: body };
          return submit(mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body }] }));
        },
        status: 400,
        code: "invalid_request",
      },
      {
        name: "TTL above the maximum",
        send: () => submit(mergeRequest({ ttlSeconds: 86_401 })),
        status: 400,
        code: "invalid_request",
        issuePath: "/ttlSeconds",
      },
      { name: "no key", send: () => call("POST", "/v1/plans", { body: mergeRequest(), key: null }), status: 401, code: "unauthorized" },
      { name: "wrong key", send: () => submit(mergeRequest(), "csk_not-a-key"), status: 401, code: "unauthorized" },
      { name: "unknown plan", send: () => call("GET", "/v1/plans/00000000-0000-4000-8000-000000000000"), status: 404, code: "not_found" },
      { name: "not a plan id", send: () => call("GET", "/v1/plans/..%2f..%2fetc"), status: 404, code: "not_found" },
      { name: "over 256 KiB", send: () => submit(mergeRequest({ reason: "x".repeat(300 * 1024) })), status: 413, code: "payload_too_large" },
      {
        name: "a 10 MB body",
        send: () => call("POST", "/v1/plans", { body: "[" + "1,".repeat(5 * 1024 * 1024) + "1]" }),
        status: 413,
        code: "payload_too_large",
      },
      {
        name: "unknown target",
        send: () => submit(mergeRequest({ actions: [{ kind: "http.json", target: "billing", path: "/x", op: "delete" }] })),
        status: 422,
        code: "unknown_target",
        issuePath: "/actions/0/target",
      },
      {
        name: "target has no such resource",
        send: () => submit(mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/404", op: "merge", body: { a: 1 } }] })),
        status: 422,
        code: "preview_failed",
        issuePath: "/actions/0",
      },
      {
        name: "wait timeout out of range",
        send: () => call("GET", "/v1/plans/00000000-0000-4000-8000-000000000000/wait?timeout=9999"),
        status: 400,
        code: "invalid_request",
      },
    ];
    it.each(cases)("$name → $status $code", async ({ send, status, code, issuePath }) => {
      const res = await send();
      expect(res.status).toBe(status);
      const body = (await res.json()) as { error: { code: string; message: string; issues?: { path: string }[] } };
      expect(body.error.code).toBe(code);
      expect(body.error.message.length).toBeGreaterThan(10);
      if (issuePath !== undefined) expect(body.error.issues?.map((i) => i.path)).toContain(issuePath);
      expect((await fetch(s.server.url + "/healthz")).status).toBe(200);
    });
  });

  it.each(["/../admin", "//evil.example/x", "/%2e%2e/secrets", "/a%2f..%2fb", "http://169.254.169.254/latest"])(
    "refuses the path %s before any request reaches the target",
    async (path) => {
      s.target.requests.length = 0;
      const res = await submit(mergeRequest({ actions: [{ kind: "http.json", target: "crm", path, op: "merge", body: { a: 1 } }] }));
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; issues: { path: string }[] } };
      expect(body.error.code).toBe("invalid_request");
      expect(body.error.issues.map((i) => i.path)).toContain("/actions/0/path");
      expect(s.target.requests).toEqual([]);
    },
  );

  it("shows an agent only its own plans", async () => {
    const plan = (await (await submit(mergeRequest({ title: "mine" }))).json()) as { id: string };
    for (const path of [`/v1/plans/${plan.id}`, `/v1/plans/${plan.id}/events`, `/v1/plans/${plan.id}/wait?timeout=0`]) {
      const res = await call("GET", path, { key: otherKey });
      expect(res.status).toBe(404);
    }
  });
});

describe("what may be proposed (deny by default), over HTTP", () => {
  const s = useServer(databaseKinds[0]!, {
    seed: { "/contacts/1": { id: 1 }, "/admin/1": { id: 1 } },
    config: (url) =>
      testConfig({
        crm: targetConfig(url, { allow: { ops: ["merge"], paths: ["/contacts/*"], maxBodyBytes: 64 } }),
        locked: targetConfig(url, { allow: undefined }),
      }),
  });
  let key: string;

  beforeAll(async () => {
    key = (await addAgent(s.server.ctx, { name: "policy-agent" })).key;
  });

  it.each([
    ["an op the target does not allow", { target: "crm", path: "/contacts/1", op: "delete" }, "targets.crm.allow.ops", "/actions/0/op"],
    ["a path outside its patterns", { target: "crm", path: "/admin/1", op: "merge", body: { a: 1 } }, "targets.crm.allow.paths", "/actions/0/path"],
    [
      "an oversize body",
      { target: "crm", path: "/contacts/1", op: "merge", body: { note: "x".repeat(100) } },
      "targets.crm.allow.maxBodyBytes",
      "/actions/0/body",
    ],
    ["a target that allows nothing", { target: "locked", path: "/contacts/1", op: "merge", body: { a: 1 } }, "targets.locked.allow", "/actions/0/target"],
  ])("refuses %s with 422 policy_denied naming the rule, before any request reaches the target", async (_name, action, rule, path) => {
    s.target.requests.length = 0;
    const res = await fetch(`${s.server.url}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "t", actions: [{ kind: "http.json", ...action }] }),
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { code: string; message: string; issues: { path: string; message: string }[]; details: { rules: string[] } } };
    expect(body.error.code).toBe("policy_denied");
    expect(body.error.details.rules).toEqual([rule]);
    expect(body.error.issues.map((i) => i.path)).toEqual([path]);
    expect(body.error.message).toContain(rule);
    expect(s.target.requests).toEqual([]);
  });
});
