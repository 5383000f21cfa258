import { and, asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { fingerprint, SHA256_PATTERN } from "../../../src/plan/fingerprint.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { auditEvents, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { refusal } from "../../support/refusal.ts";
import { APPROVERS, mergeRequest } from "../../support/harness.ts";
import { useSubmitHarness } from "./submit-plan-setup.ts";

describe.each(databaseKinds)("submitPlan on $name", (kind) => {
  const { h, planCount } = useSubmitHarness(kind);

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
});
