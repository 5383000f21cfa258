import { and, asc, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { fingerprint, SHA256_PATTERN } from "../../src/plan/fingerprint.ts";
import type { Json } from "../../src/plan/json.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { ServiceError } from "../../src/service/errors.ts";
import { getPlan } from "../../src/service/intake/get-plan.ts";
import { planView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import { auditEvents, plans } from "../../src/store/schema.ts";
import { databaseKinds } from "../support/databases.ts";
import { refusal } from "../support/refusal.ts";
import { useHarness } from "../support/use-harness.ts";
import type { HttpJsonServerTarget } from "../../src/config/load.ts";
import { APPROVERS, mergeRequest, READ_TOKEN, targetConfig, withTargets, WRITE_TOKEN } from "../support/harness.ts";

describe.each(databaseKinds)("submitPlan on $name", (kind) => {
  const h = useHarness(kind);
  /** Same database; crm plus a target nobody listens on. */
  const hDown = h.another({
    targets: (url) => ({ crm: targetConfig(url), down: targetConfig("http://127.0.0.1:1", { timeoutMs: 3000 }) }),
  });
  /** Same database; two targets over the same server with different policy overrides. */
  const hMulti = h.another({
    defaults: { approvers: ["U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"] },
    targets: (url) => ({
      crm: targetConfig(url, { policy: { approvers: ["U0CAROL", "U0ALICE", "U0BOB"], requiredApprovals: 1, ttl: { default: 900, max: 3600 } } }),
      billing: targetConfig(url, { policy: { approvers: ["U0DAVE", "U0CAROL", "U0BOB"], requiredApprovals: 2, ttl: { default: 600, max: 86_400 } } }),
    }),
  });
  /** Same database; the requester is the only approver. */
  const hSolo = h.another({ defaults: { approvers: ["U0ALICE"], requiredApprovals: 1 } });

  const planCount = () => h.database.db.$count(plans);

  it("stores a pending plan and answers with its hash, expiry, review URL, document and preview", async () => {
    const submittedAt = h.clock.now();
    const before = h.target.get("/contacts/1");
    const etag = h.target.etagOf("/contacts/1");
    const { created, plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });

    expect(created).toBe(true);
    expect(plan.status).toBe("pending");
    expect(plan.hash).toMatch(SHA256_PATTERN);
    expect(plan.expiresAt).toBe(new Date(submittedAt.getTime() + 900_000).toISOString());
    expect(plan.reviewUrl).toBe(`http://countersign.test/plans/${plan.id}`);
    expect(plan.approvals).toEqual([]);

    // Anyone holding the document can recompute the hash.
    expect(fingerprint(plan.plan)).toBe(plan.hash);
    const after = { id: 1, name: "Ana Lima", email: "ana@new.example" };
    expect(plan.plan).toEqual({
      v: 1,
      id: plan.id,
      environment: "test",
      agent: h.agent.name,
      title: "Update Ana's email",
      reason: "Customer asked by phone, ticket 4411",
      onBehalfOf: "U0REQUESTER",
      actions: [
        {
          kind: "http.json",
          target: "crm",
          path: "/contacts/1",
          op: "merge",
          body: { email: "ana@new.example" },
          precondition: { etag },
          beforeDigest: fingerprint(before),
          afterDigest: fingerprint(after),
        },
      ],
      policy: { approvers: [...APPROVERS].sort(), requiredApprovals: 1, grantTtlSeconds: 600, rule: "defaults", risk: { level: "low", rule: "defaults.risk" } },
      expiresAt: plan.expiresAt,
    });

    expect(plan.preview).toEqual({
      actions: [
        {
          target: "crm",
          path: "/contacts/1",
          op: "merge",
          before,
          after,
          version: etag,
          precondition: "etag",
          changes: [{ path: "/email", from: "ana@old.example", to: "ana@new.example" }],
        },
      ],
    });

    // What is stored is exactly what was hashed, and reads back the same.
    const [row] = await h.database.db.select().from(plans).where(eq(plans.id, plan.id));
    expect(row!.hash).toBe(plan.hash);
    expect(row!.status).toBe("pending");
    expect(row!.agentId).toBe(h.agent.id);
    expect(row!.expiresAt.toISOString()).toBe(plan.expiresAt);
    expect(fingerprint(row!.document)).toBe(row!.hash);
    const again = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
    expect(again.hash).toBe(plan.hash);
    expect(again.plan).toEqual(plan.plan);
    expect(again.preview).toEqual(plan.preview);

    // The preview changed nothing on the target.
    expect(h.target.get("/contacts/1")).toEqual(before);
    expect(h.target.etagOf("/contacts/1")).toBe(etag);
  });

  it("honours the requested ttlSeconds", async () => {
    const submittedAt = h.clock.now();
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ ttlSeconds: 120, actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { name: "Bruno C." } }] }),
    });
    expect(plan.expiresAt).toBe(new Date(submittedAt.getTime() + 120_000).toISOString());
    expect(plan.plan.expiresAt).toBe(plan.expiresAt);
  });

  it("previews with GET requests carrying only the read credential", async () => {
    const from = h.target.requests.length;
    await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({
        title: "Touch two contacts",
        actions: [
          { kind: "http.json", target: "crm", path: "/contacts/1", op: "replace", body: { id: 1, name: "Ana" } },
          { kind: "http.json", target: "crm", path: "/contacts/2", op: "delete" },
          { kind: "http.json", target: "crm", path: "/contacts/3", op: "create", body: { id: 3 } },
        ],
      }),
    });
    const sent = h.target.requests.slice(from);
    expect(sent.map((r) => `${r.method} ${r.path}`).sort()).toEqual(["GET /contacts/1", "GET /contacts/2", "GET /contacts/3"]);
    for (const request of sent) {
      expect(request.method).toBe("GET");
      expect(request.headers.authorization).toBe(`Bearer ${READ_TOKEN}`);
      expect(request.body).toBe("");
      expect(JSON.stringify(request.headers)).not.toContain(WRITE_TOKEN);
    }
    expect(h.target.writes()).toEqual([]);
    // Nothing was deleted or created by the preview.
    expect(h.target.get("/contacts/2")).toBeDefined();
    expect(h.target.get("/contacts/3")).toBeUndefined();
  });

  it("previews a create on an absent path with the precondition {absent: true}", async () => {
    const body = { id: 7, name: "Carla Dias", email: "carla@example.com" };
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({
        title: "Create Carla",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/7", op: "create", body }],
      }),
    });
    expect(plan.status).toBe("pending");
    expect(plan.plan.actions[0]!.precondition).toEqual({ absent: true });
    expect(plan.plan.actions[0]!.beforeDigest).toBe(fingerprint(null));
    expect(plan.plan.actions[0]!.afterDigest).toBe(fingerprint(body));
    expect(plan.preview.actions[0]).toEqual({
      target: "crm",
      path: "/contacts/7",
      op: "create",
      before: null,
      after: body,
      version: null,
      precondition: "absent",
      changes: [{ path: "", to: body }],
    });
    expect(fingerprint(plan.plan)).toBe(plan.hash);
    expect(h.target.get("/contacts/7")).toBeUndefined();
  });

  it("refuses a create where a resource exists (preview_failed), storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Create over Ana",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "create", body: { id: 1 } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.issues).toEqual([expect.objectContaining({ path: "/actions/0" })]);
    expect(await planCount()).toBe(rows);
  });

  it("refuses a merge on a path the target does not have (404) with preview_failed, storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Update a ghost",
          actions: [{ kind: "http.json", target: "crm", path: "/contacts/404", op: "merge", body: { email: "x@example.com" } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ target: "crm", path: "/contacts/404" });
    expect(await planCount()).toBe(rows);
  });

  it("refuses when the target answers 500, passing on the target's answer, storing nothing", async () => {
    const rows = await planCount();
    h.target.failWith = { status: 500, body: "database on fire" };
    let err: ServiceError;
    try {
      err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "While the target is down" }) }));
    } finally {
      h.target.failWith = undefined;
    }
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ target: "crm", path: "/contacts/1", targetAnswer: { status: 500, body: "database on fire" } });
    expect(await planCount()).toBe(rows);
  });

  it("refuses a target that gives no ETag, storing nothing", async () => {
    const rows = await planCount();
    h.target.omitEtag = true;
    let err: ServiceError;
    try {
      err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "No ETag" }) }));
    } finally {
      h.target.omitEtag = false;
    }
    expect(err.code).toBe("preview_failed");
    expect(err.message).toMatch(/ETag/);
    expect(await planCount()).toBe(rows);
  });

  it("refuses a target that is unreachable, storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(hDown.ctx, {
        agent: hDown.agent,
        request: mergeRequest({
          title: "To a dead target",
          actions: [{ kind: "http.json", target: "down", path: "/contacts/1", op: "merge", body: { a: 1 } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ target: "down", path: "/contacts/1" });
    expect(err.message).toMatch(/unreachable|did not answer/);
    expect(await planCount()).toBe(rows);
  });

  it("refuses a target whose body is not JSON, passing on what it said, storing nothing", async () => {
    h.target.set("/raw/1", "<html>not json</html>");
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Merge into HTML",
          actions: [{ kind: "http.json", target: "crm", path: "/raw/1", op: "merge", body: { a: 1 } }],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.details).toMatchObject({ targetAnswer: { status: 200, body: "<html>not json</html>" } });
    expect(await planCount()).toBe(rows);
  });

  it("refuses when any one of several actions fails its preview, storing nothing", async () => {
    const rows = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "One good, one bad",
          actions: [
            { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { a: 1 } },
            { kind: "http.json", target: "crm", path: "/contacts/405", op: "merge", body: { a: 1 } },
          ],
        }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.issues).toEqual([expect.objectContaining({ path: "/actions/1" })]);
    expect(await planCount()).toBe(rows);
  });

  it("refuses an unknown target with unknown_target at /actions/i/target, before any request", async () => {
    const rows = await planCount();
    const from = h.target.requests.length;
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({
          title: "Where?",
          actions: [
            { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { a: 1 } },
            { kind: "http.json", target: "erp", path: "/orders/1", op: "merge", body: { a: 1 } },
          ],
        }),
      }),
    );
    expect(err.code).toBe("unknown_target");
    expect(err.issues).toEqual([expect.objectContaining({ path: "/actions/1/target" })]);
    expect(h.target.requests.length).toBe(from);
    expect(await planCount()).toBe(rows);

    const first = await refusal(
      submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ actions: [{ kind: "http.json", target: "erp", path: "/x", op: "delete" }] }) }),
    );
    expect(first.code).toBe("unknown_target");
    expect(first.issues).toEqual([expect.objectContaining({ path: "/actions/0/target" })]);
  });

  it("refuses a ttlSeconds above the policy maximum with invalid_request at /ttlSeconds, before any request", async () => {
    const rows = await planCount();
    const from = h.target.requests.length;
    const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ ttlSeconds: 86_401 }) }));
    expect(err.code).toBe("invalid_request");
    expect(err.issues).toEqual([expect.objectContaining({ path: "/ttlSeconds" })]);
    expect(h.target.requests.length).toBe(from);
    expect(await planCount()).toBe(rows);

    // The maximum itself is allowed.
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ ttlSeconds: 86_400, title: "Longest wait" }) });
    expect(new Date(plan.expiresAt).getTime() - new Date(plan.createdAt).getTime()).toBe(86_400_000);
  });

  it("refuses a path that leaves the target before sending anything", async () => {
    const from = h.target.requests.length;
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/%2e%2e/admin", op: "delete" }] }),
      }),
    );
    expect(err.code).toBe("invalid_request");
    expect(err.issues?.[0]?.path).toBe("/actions/0/path");
    expect(h.target.requests.length).toBe(from);
  });

  it("answers a retry with the same idempotencyKey and body with the same plan (created false)", async () => {
    const body = mergeRequest({ title: "Idempotent", idempotencyKey: "key-same-body" });
    const first = await submitPlan(h.ctx, { agent: h.agent, request: body });
    h.clock.advance(5);
    const second = await submitPlan(h.ctx, { agent: h.agent, request: structuredClone(body) });
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.plan.id).toBe(first.plan.id);
    expect(second.plan.hash).toBe(first.plan.hash);
    expect(second.plan.expiresAt).toBe(first.plan.expiresAt);
    const rows = await h.database.db.select({ id: plans.id }).from(plans).where(eq(plans.idempotencyKey, "key-same-body"));
    expect(rows).toEqual([{ id: first.plan.id }]);
    const submitted = await h.database.db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.planId, first.plan.id), eq(auditEvents.type, "plan.submitted")));
    expect(submitted).toHaveLength(1);
  });

  it("refuses the same idempotencyKey with a different body (idempotency_conflict), storing nothing", async () => {
    const first = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "Original", idempotencyKey: "key-conflict" }) });
    const rows = await planCount();
    const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "Something else", idempotencyKey: "key-conflict" }) }));
    expect(err.code).toBe("idempotency_conflict");
    expect(err.details).toMatchObject({ planId: first.plan.id });
    expect(await planCount()).toBe(rows);
  });

  it("keeps idempotency keys per agent: another agent's same key makes its own plan", async () => {
    const body = mergeRequest({ title: "Shared key", idempotencyKey: "key-per-agent" });
    const mine = await submitPlan(h.ctx, { agent: h.agent, request: body });
    const other = await addAgent(h.ctx, { name: "other-submitter" });
    const theirs = await submitPlan(h.ctx, { agent: { id: other.id, name: other.name }, request: body });
    expect(theirs.created).toBe(true);
    expect(theirs.plan.id).not.toBe(mine.plan.id);
    expect(theirs.plan.plan.agent).toBe("other-submitter");
  });

  it("refuses a plan whose only approver is the requester (policy_denied), storing nothing", async () => {
    const rows = await planCount();
    const from = hSolo.target.requests.length;
    const err = await refusal(submitPlan(hSolo.ctx, { agent: hSolo.agent, request: mergeRequest({ onBehalfOf: "U0ALICE" }) }));
    expect(err.code).toBe("policy_denied");
    expect(await planCount()).toBe(rows);
    expect(hSolo.target.requests.length).toBe(from);
    // The same plan for someone else is fine.
    const { plan } = await submitPlan(hSolo.ctx, { agent: hSolo.agent, request: mergeRequest({ onBehalfOf: "U0REQUESTER" }) });
    expect(plan.plan.policy).toEqual({
      approvers: ["U0ALICE"],
      requiredApprovals: 1,
      grantTtlSeconds: 600,
      rule: "defaults",
      risk: { level: "low", rule: "defaults.risk" },
    });
  });

  it("writes a plan.submitted audit event in the same breath", async () => {
    const submittedAt = h.clock.now();
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "Audited" }) });
    const events = await h.database.db.select().from(auditEvents).where(eq(auditEvents.planId, plan.id)).orderBy(asc(auditEvents.id));
    expect(events.map((e) => e.type)).toEqual(["plan.submitted"]);
    expect(events[0]!.actor).toEqual({ type: "agent", agentId: h.agent.id, name: h.agent.name });
    expect(events[0]!.data).toEqual({ title: "Audited", expiresAt: plan.expiresAt });
    expect(events[0]!.at.toISOString()).toBe(submittedAt.toISOString());
    expect(events[0]!.hash).toMatch(SHA256_PATTERN);
  });

  describe("a plan over several targets", () => {
    const twoTargets = [
      { kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "ana@two.example" } },
      { kind: "http.json", target: "billing", path: "/contacts/2", op: "merge", body: { email: "bruno@two.example" } },
    ];

    it("lives under the intersection of their policies: common approvers, largest quorum, shortest TTL", async () => {
      const submittedAt = hMulti.clock.now();
      const { plan } = await submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "Two targets", actions: twoTargets }) });
      expect(plan.plan.policy).toEqual({
        approvers: ["U0BOB", "U0CAROL"],
        requiredApprovals: 2,
        grantTtlSeconds: 600,
        rule: "targets.crm.policy + targets.billing.policy",
        risk: { level: "low", rule: "defaults.risk" },
      });
      expect(plan.expiresAt).toBe(new Date(submittedAt.getTime() + 600_000).toISOString());
      expect(fingerprint(plan.plan)).toBe(plan.hash);
    });

    it("a plan over one of them keeps that target's own policy", async () => {
      const { plan: crmOnly } = await submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "crm only", actions: [twoTargets[0]] }) });
      expect(crmOnly.plan.policy).toEqual({
        approvers: ["U0ALICE", "U0BOB", "U0CAROL"],
        requiredApprovals: 1,
        grantTtlSeconds: 600,
        rule: "targets.crm.policy",
        risk: { level: "low", rule: "defaults.risk" },
      });
      const { plan: billingOnly } = await submitPlan(hMulti.ctx, {
        agent: hMulti.agent,
        request: mergeRequest({ title: "billing only", actions: [twoTargets[1]] }),
      });
      expect(billingOnly.plan.policy).toEqual({
        approvers: ["U0BOB", "U0CAROL", "U0DAVE"],
        requiredApprovals: 2,
        grantTtlSeconds: 600,
        rule: "targets.billing.policy",
        risk: { level: "low", rule: "defaults.risk" },
      });
    });

    it("is bounded by the smallest TTL maximum", async () => {
      const rows = await planCount();
      const err = await refusal(
        submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "Too long", actions: twoTargets, ttlSeconds: 3601 }) }),
      );
      expect(err.code).toBe("invalid_request");
      expect(err.issues).toEqual([expect.objectContaining({ path: "/ttlSeconds" })]);
      expect(await planCount()).toBe(rows);
    });

    it("is refused when the requester leaves too few common approvers for the quorum", async () => {
      const rows = await planCount();
      const err = await refusal(
        submitPlan(hMulti.ctx, { agent: hMulti.agent, request: mergeRequest({ title: "Bob asks", actions: twoTargets, onBehalfOf: "U0BOB" }) }),
      );
      expect(err.code).toBe("policy_denied");
      expect(await planCount()).toBe(rows);
    });
  });
});

describe.each(databaseKinds)("risk levels on $name", (kind) => {
  const h = useHarness(kind, {
    defaults: { highRisk: { requiredApprovals: 2, ttlMax: 600 } },
    targets: (url) => ({ crm: targetConfig(url, { policy: { riskByOp: { delete: "high" } } }) }),
  });

  it("a high-risk plan records its risk and the rule, needs more approvals and gets less time", async () => {
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "delete" }] }),
    });
    expect(plan.plan.policy).toMatchObject({ requiredApprovals: 2, risk: { level: "high", rule: "targets.crm.policy.riskByOp.delete" } });
    expect(Date.parse(plan.expiresAt) - h.clock.now().getTime()).toBe(600_000);
    expect(plan.hash).toBe(fingerprint(plan.plan));
    const low = (await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() })).plan;
    expect(low.plan.policy).toMatchObject({ requiredApprovals: 1, risk: { level: "low", rule: "defaults.risk" } });
  });
});

describe.each(databaseKinds)("submitPlan refuses what cannot be hashed or stored, on $name", (kind) => {
  const h = useHarness(kind);
  const planCount = () => h.database.db.$count(plans);

  beforeAll(async () => {
    h.ctx.config.webhooks.allowedHosts = ["hooks.example.com"];
  });

  it.each<[string, Record<string, unknown>, string, RegExp]>([
    [
      "a lone surrogate in a body value",
      { actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { name: "Ana \uD800" } }] },
      "/actions/0/body/name",
      /lone UTF-16 surrogate/,
    ],
    ["a lone low surrogate in the title", { title: "Fix \uDC00 now" }, "/title", /lone UTF-16 surrogate/],
    ["a NUL in the idempotencyKey", { idempotencyKey: "key\u0000one" }, "/idempotencyKey", /NUL/],
    ["a NUL in the reason", { reason: "because\u0000" }, "/reason", /NUL/],
    [
      "a lone surrogate in a body key",
      { actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { ["e\uD83Dmail"]: "x" } }] },
      "/actions/0/body",
      /field name/,
    ],
  ])("%s → invalid_request naming the JSON Pointer, nothing stored, target never read", async (_name, overrides, pointer, why) => {
    const before = await planCount();
    const reads = h.target.requests.length;
    const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest(overrides) }));
    expect(err.code).toBe("invalid_request");
    expect(err.issues).toContainEqual({ path: pointer, message: expect.stringMatching(why) });
    expect(err.message).toContain(pointer);
    expect(await planCount()).toBe(before);
    expect(h.target.requests.length).toBe(reads);
  });

  it("a callbackUrl with credentials is refused (without echoing them), even for an allowed host", async () => {
    const before = await planCount();
    const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: "https://bot:hunter2@hooks.example.com/cs" }) }));
    expect(err.code).toBe("invalid_request");
    expect(err.issues).toEqual([{ path: "/callbackUrl", message: expect.stringMatching(/credentials/) }]);
    expect(JSON.stringify({ message: err.message, issues: err.issues })).not.toContain("hunter2");
    expect(await planCount()).toBe(before);
    // The same URL without them is fine.
    expect((await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ callbackUrl: "https://hooks.example.com/cs" }) })).created).toBe(true);
  });

  it("a target document with a lone surrogate → preview_failed naming where, nothing stored", async () => {
    h.target.set("/contacts/9", { id: 9, name: "Zoë \uD800" });
    const before = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/9", op: "merge", body: { email: "z@example.com" } }] }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.message).toMatch(/cannot be hashed exactly: at \/name, the string contains a lone UTF-16 surrogate/);
    expect(await planCount()).toBe(before);
  });

  it("a target document nested deeper than hashing can follow → preview_failed naming where, nothing stored", async () => {
    let deep: Json = "bottom";
    for (let i = 0; i < 300; i++) deep = [deep];
    h.target.set("/contacts/deep", { id: 7, tree: deep });
    const before = await planCount();
    const err = await refusal(
      submitPlan(h.ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/deep", op: "merge", body: { email: "d@example.com" } }] }),
      }),
    );
    expect(err.code).toBe("preview_failed");
    expect(err.message).toMatch(/cannot be hashed exactly: at \/tree(\/0)+, it nests deeper than 256 levels/);
    expect(await planCount()).toBe(before);
  });

  it.each(["12345678901234567890", "1.00000000000000000001", "1e400"])(
    "a target document with the number %s → preview_failed, nothing stored",
    async (token) => {
      const before = await planCount();
      h.target.beforeHandle = (r) => {
        if (r.method === "GET" && r.path === "/contacts/1") h.target.failWith = { status: 200, body: `{"id": 1, "limits": [0, ${token}]}` };
      };
      try {
        const err = await refusal(submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() }));
        expect(err.code).toBe("preview_failed");
        expect(err.message).toContain(`at /limits/1, the number ${token} cannot be held exactly`);
      } finally {
        h.target.beforeHandle = undefined;
        h.target.failWith = undefined;
      }
      expect(await planCount()).toBe(before);
    },
  );

  it("a target number spelled differently but with the same value (1.0, 1e2) is accepted and shown as that value", async () => {
    // The raw answer carries no ETag, so this test's target compares digests instead.
    const ctx = withTargets(h.ctx, { crm: { ...(h.ctx.config.targets.crm as HttpJsonServerTarget), precondition: "digest" } });
    h.target.beforeHandle = (r) => {
      if (r.method === "GET" && r.path === "/contacts/2") h.target.failWith = { status: 200, body: '{"id": 2.0, "score": 1e2, "tiny": 0.10}' };
    };
    try {
      const { plan } = await submitPlan(ctx, {
        agent: h.agent,
        request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { score: 101 } }] }),
      });
      expect(plan.preview.actions[0]!.before).toEqual({ id: 2, score: 100, tiny: 0.1 });
      expect(plan.preview.actions[0]!.changes).toEqual([{ path: "/score", from: 100, to: 101 }]);
    } finally {
      await ctx.close();
      h.target.beforeHandle = undefined;
      h.target.failWith = undefined;
    }
  });

  it("bidi controls reach the agent exactly but reviewers as visible markers", async () => {
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({
        title: "Pay \u202E01$\u202C to Ana",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/2", op: "merge", body: { note: "\u2066x\u2069" } }],
      }),
    });
    expect(plan.plan.title).toBe("Pay \u202E01$\u202C to Ana");
    expect(fingerprint(plan.plan)).toBe(plan.hash);
    const [row] = await h.database.db.select().from(plans).where(eq(plans.id, plan.id));
    const shown = await planView(h.database.db, h.ctx.config.publicUrl, row!, "reviewer", h.ctx.redaction);
    expect(shown.plan.title).toBe("Pay ⟨U+202E⟩01$⟨U+202C⟩ to Ana");
    expect(shown.preview.actions[0]!.after).toMatchObject({ note: "⟨U+2066⟩x⟨U+2069⟩" });
    expect(shown.preview.actions[0]!.changes).toContainEqual({ path: "/note", to: "⟨U+2066⟩x⟨U+2069⟩" });
    expect(JSON.stringify(shown)).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
  });
});
