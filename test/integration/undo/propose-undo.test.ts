import { and, asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { decide } from "../../../src/service/decide/decide.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { revokeAgent } from "../../../src/service/agents/revoke-agent.ts";
import { editPlan } from "../../../src/service/edit/index.ts";
import { proposeUndo } from "../../../src/service/undo/index.ts";
import { auditEvents, plans } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig, WRITE_TOKEN } from "../../support/harness.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";
import { approveAndApply, refusal } from "./undo-setup.ts";

const write = (url: string) => ({ crm: targetConfig(url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) });

describe.each(databaseKinds)("undo after apply ($name)", (kind) => {
  const h = useHarness(kind, { sinks: ["test"] });
  /** A target whose allow rules leave out delete: an undone create cannot be proposed there. */
  const noDelete = h.another({ targets: (url) => ({ crm: targetConfig(url, { allow: { ops: ["merge", "replace", "create"], paths: ["/**"] } }) }) });
  let n = 0;

  async function applied(actions: unknown[], on: HarnessView = h) {
    const { plan } = await submitPlan(on.ctx, { agent: on.agent, request: mergeRequest({ title: `to undo ${++n}`, actions }) });
    const outcome = await approveAndApply(on.ctx, plan, write(on.target.url));
    expect(outcome.status).toBe("applied");
    return plan;
  }
  const eventTypes = async (planId: string) =>
    (await h.database.db.select({ type: auditEvents.type }).from(auditEvents).where(eq(auditEvents.planId, planId)).orderBy(asc(auditEvents.id))).map(
      (e) => e.type,
    );
  const plansUndoing = (planId: string) => h.database.db.$count(plans, eq(plans.undoes, planId));

  it("an undo of an applied merge puts the target back as it was before, verified, and links both plans", async () => {
    h.target.set("/contacts/31", { id: 31, name: "Ana", email: "ana@old.example" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/31", op: "merge", body: { email: "ana@new.example", phone: "555" } }]);
    expect(h.target.get("/contacts/31")).toEqual({ id: 31, name: "Ana", email: "ana@new.example", phone: "555" });

    const { created, plan: undo } = await proposeUndo(h.ctx, { planId: original.id, asker: { agent: h.agent } });
    expect(created).toBe(true);
    expect(undo).toMatchObject({
      status: "pending",
      plan: { undoes: original.id, agent: h.agent.name, title: "Undo: to undo 1" },
      undoes: { id: original.id, hash: original.hash },
    });
    expect(undo.plan.actions).toMatchObject([{ kind: "http.json", op: "merge", body: { email: "ana@old.example", phone: null } }]);
    expect(undo.preview.actions[0]!.after).toEqual({ id: 31, name: "Ana", email: "ana@old.example" });

    const outcome = await approveAndApply(h.ctx, undo, write(h.target.url), "U0BOB");
    expect(outcome).toMatchObject({ status: "applied", actions: [{ status: "applied", verified: true }] });
    expect(h.target.get("/contacts/31")).toEqual({ id: 31, name: "Ana", email: "ana@old.example" });

    const seen = await getPlan(h.ctx, { agent: h.agent, planId: original.id });
    expect(seen.undoneBy).toMatchObject({ id: undo.id, hash: undo.hash, reviewUrl: `http://countersign.test/plans/${undo.id}` });
    expect(await eventTypes(original.id)).toEqual(expect.arrayContaining(["undo.proposed", "undo.applied"]));
    // Taken back once: a second ask is refused, saying by which plan.
    const again = await refusal(proposeUndo(h.ctx, { planId: original.id, asker: { agent: h.agent } }));
    expect(again).toMatchObject({ code: "not_undoable", details: { status: "applied", undoneBy: undo.id } });
  });

  it("a person asks: they are a requester of the undo, their own Approve is refused; a second ask names the open undo", async () => {
    h.target.set("/contacts/32", { id: 32, name: "Bia", email: "bia@old.example" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/32", op: "merge", body: { email: "bia@new.example" } }]);
    const { plan: undo } = await proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0CAROL", via: "slack" } } });
    expect(undo.plan.askedBy).toEqual({ userId: "U0CAROL", via: "slack" });

    const own = await refusal(decide(h.ctx, { planId: undo.id, hash: undo.hash, actor: { userId: "U0CAROL", via: "web" }, verdict: "approve" }));
    expect(own.code).toBe("self_approval");

    const second = await refusal(proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0ALICE", via: "web" } } }));
    expect(second).toMatchObject({ code: "undo_open", details: { planId: undo.id, status: "pending" } });
    expect(await plansUndoing(original.id)).toBe(1);

    // Rejected, the undo is no longer open: it may be asked for again.
    await decide(h.ctx, { planId: undo.id, hash: undo.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "not now" });
    const { plan: retry } = await proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0ALICE", via: "web" } } });
    expect(retry.id).not.toBe(undo.id);
    await decide(h.ctx, { planId: retry.id, hash: retry.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "still not" });
  });

  it("an edited undo still takes back the same plan: its asker stays a requester and it is the open undo", async () => {
    h.target.set("/contacts/39", { id: 39, name: "Edu", email: "edu@old.example" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/39", op: "merge", body: { email: "edu@new.example" } }]);
    const { plan: undo } = await proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0CAROL", via: "slack" } } });
    const { plan: edited } = await editPlan(h.ctx, {
      planId: undo.id,
      hash: undo.hash,
      person: { userId: "U0ALICE", via: "web" },
      values: { "0:/email": JSON.stringify("edu@older.example") },
    });
    expect(edited.plan).toMatchObject({ undoes: original.id, askedBy: { userId: "U0CAROL", via: "slack" }, editedBy: { userId: "U0ALICE", via: "web" } });
    for (const person of ["U0CAROL", "U0ALICE"]) {
      const own = await refusal(decide(h.ctx, { planId: edited.id, hash: edited.hash, actor: { userId: person, via: "web" }, verdict: "approve" }));
      expect(own.code).toBe("self_approval");
    }
    const second = await refusal(proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0BOB", via: "web" } } }));
    expect(second).toMatchObject({ code: "undo_open", details: { planId: edited.id } });
    await decide(h.ctx, { planId: edited.id, hash: edited.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "not now" });
  });

  it("an agent at its limits can still have its plan taken back: the undo is not its request", async () => {
    noDelete.target.set("/contacts/40", { id: 40, email: "l@old" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/40", op: "merge", body: { email: "l@new" } }], noDelete);
    // One plan a minute, and this agent's was just submitted: its next submission is refused.
    const limited = { ...noDelete.ctx, config: { ...noDelete.ctx.config, limits: { plansPerMinute: 1, maxPending: 1, agents: {} } } };
    expect((await refusal(submitPlan(limited, { agent: noDelete.agent, request: mergeRequest({ title: "one too many" }) }))).code).toBe("rate_limited");
    const { created, plan: undo } = await proposeUndo(limited, { planId: original.id, asker: { agent: noDelete.agent } });
    expect(created).toBe(true);
    await decide(noDelete.ctx, { planId: undo.id, hash: undo.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "no" });
  });

  it("two asks at once store one undo; the other is told it is open", async () => {
    h.target.set("/contacts/39", { id: 39, email: "z@old" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/39", op: "merge", body: { email: "z@new" } }]);
    const asks = await Promise.allSettled(
      ["U0ALICE", "U0BOB"].map((userId) => proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId, via: "web" as const } } })),
    );
    const made = asks.flatMap((a) => (a.status === "fulfilled" ? [a.value.plan] : []));
    expect(made).toHaveLength(1);
    expect(asks.flatMap((a) => (a.status === "rejected" ? [a.reason] : []))).toEqual([
      expect.objectContaining({ code: "undo_open", details: expect.objectContaining({ planId: made[0]!.id }) }),
    ]);
    expect(await plansUndoing(original.id)).toBe(1);
    await decide(h.ctx, { planId: made[0]!.id, hash: made[0]!.hash, actor: { userId: "U0CAROL", via: "web" }, verdict: "reject", reason: "no" });
  });

  it("an undo after someone else changed the target is refused naming the fields; nothing is stored or written", async () => {
    h.target.set("/contacts/33", { id: 33, name: "Cai", email: "cai@old.example", phone: "1" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/33", op: "merge", body: { email: "cai@new.example" } }]);
    // Someone edits the field the plan changed (and one it did not).
    h.target.set("/contacts/33", { id: 33, name: "Cai", email: "cai@other.example", phone: "2" });
    const writes = h.target.writes().length;

    const err = await refusal(proposeUndo(h.ctx, { planId: original.id, asker: { agent: h.agent } }));
    expect(err.code).toBe("undo_target_changed");
    expect(err.message).toContain("crm /contacts/33 (/email)");
    expect(err.details).toEqual({
      actions: [{ undoes: 0, target: "crm", path: "/contacts/33", fields: [{ path: "/email", expected: "cai@new.example", actual: "cai@other.example" }] }],
    });
    expect(await plansUndoing(original.id)).toBe(0);
    expect(h.target.writes().length).toBe(writes);
    expect(await eventTypes(original.id)).not.toContain("undo.proposed");
  });

  it("a write that did not land as approved is undone from the state re-read after it, and the reviewer is told", async () => {
    h.target.set("/contacts/41", { id: 41, email: "d@old.example" });
    // The target keeps its own spelling of what it was sent.
    h.target.beforeAnswer = (req) => {
      if (req.method === "PATCH" && req.path === "/contacts/41") h.target.set("/contacts/41", { id: 41, email: "D@NEW.EXAMPLE" });
    };
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/41", op: "merge", body: { email: "d@new.example" } }]).finally(
      () => (h.target.beforeAnswer = undefined),
    );
    const seen = await getPlan(h.ctx, { agent: h.agent, planId: original.id });
    expect(seen.outcome?.actions[0]).toMatchObject({ verified: false, driftAfterApply: [{ path: "/email", actual: "D@NEW.EXAMPLE" }] });

    const { plan: undo } = await proposeUndo(h.ctx, { planId: original.id, asker: { agent: h.agent } });
    expect(undo.plan.reason).toContain("action 1 (crm /contacts/41) did not land as approved; it is undone from the state re-read after the write (/email)");
    expect(undo.preview.actions[0]!.changes).toEqual([{ path: "/email", from: "D@NEW.EXAMPLE", to: "d@old.example" }]);
    expect(await approveAndApply(h.ctx, undo, write(h.target.url), "U0BOB")).toMatchObject({ status: "applied", actions: [{ verified: true }] });
    expect(h.target.get("/contacts/41")).toEqual({ id: 41, email: "d@old.example" });
  });

  it("takes back a create with a delete and a delete with a create of the document before, last written first", async () => {
    h.target.set("/contacts/34", { id: 34, name: "Dora" });
    const original = await applied([
      { kind: "http.json", target: "crm", path: "/contacts/35", op: "create", body: { id: 35, name: "Edu" } },
      { kind: "http.json", target: "crm", path: "/contacts/34", op: "delete" },
    ]);
    expect(h.target.get("/contacts/34")).toBeUndefined();
    const { plan: undo } = await proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0ALICE", via: "web" } } });
    expect(undo.plan.actions.map((a) => [a.op, a.path])).toEqual([
      ["create", "/contacts/34"],
      ["delete", "/contacts/35"],
    ]);
    expect(await approveAndApply(h.ctx, undo, write(h.target.url), "U0BOB")).toMatchObject({ status: "applied" });
    expect(h.target.get("/contacts/34")).toEqual({ id: 34, name: "Dora" });
    expect(h.target.get("/contacts/35")).toBeUndefined();
  });

  it("an action the targets' allow rules refuse is named: an undone create needs delete in allow.ops", async () => {
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/36", op: "create", body: { id: 36 } }], noDelete);
    const err = await refusal(proposeUndo(noDelete.ctx, { planId: original.id, asker: { agent: noDelete.agent } }));
    expect(err.code).toBe("undo_refused");
    expect(err.issues).toEqual([
      {
        path: "/actions/0/op",
        message: expect.stringMatching(/^undoing action 1 \(crm \/contacts\/36\): op 'delete' is not allowed.*targets\.crm\.allow\.ops/),
      },
    ]);
  });

  it("refuses what wrote nothing, people who may not decide plans on its targets, and another agent's plan", async () => {
    const { plan: pending } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "still pending" }) });
    expect(await refusal(proposeUndo(h.ctx, { planId: pending.id, asker: { agent: h.agent } }))).toMatchObject({
      code: "not_undoable",
      details: { status: "pending" },
    });
    await decide(h.ctx, { planId: pending.id, hash: pending.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "no" });

    h.target.set("/contacts/37", { id: 37, email: "x@old" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/37", op: "merge", body: { email: "x@new" } }]);
    expect((await refusal(proposeUndo(h.ctx, { planId: original.id, asker: { person: { userId: "U0MALLORY", via: "web" } } }))).code).toBe("not_an_approver");
    expect((await refusal(proposeUndo(noDelete.ctx, { planId: original.id, asker: { agent: noDelete.agent } }))).code).toBe("not_found");
    expect(await plansUndoing(original.id)).toBe(0);
  });

  it("an agent's retry under one idempotency key answers with the same undo; a revoked agent's plan can still be taken back", async () => {
    noDelete.target.set("/contacts/38", { id: 38, email: "y@old" });
    const original = await applied([{ kind: "http.json", target: "crm", path: "/contacts/38", op: "merge", body: { email: "y@new" } }], noDelete);
    const first = await proposeUndo(noDelete.ctx, { planId: original.id, asker: { agent: noDelete.agent }, request: { idempotencyKey: "undo-38" } });
    const retry = await proposeUndo(noDelete.ctx, { planId: original.id, asker: { agent: noDelete.agent }, request: { idempotencyKey: "undo-38" } });
    expect(first.created).toBe(true);
    expect(retry).toMatchObject({ created: false, plan: { id: first.plan.id } });
    await decide(noDelete.ctx, { planId: first.plan.id, hash: first.plan.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "later" });

    await revokeAgent(noDelete.ctx, { name: noDelete.agent.name });
    const { plan: undo } = await proposeUndo(noDelete.ctx, { planId: original.id, asker: { person: { userId: "U0ALICE", via: "web" } } });
    expect(undo.plan.agent).toBe(noDelete.agent.name);
    const [row] = await h.database.db
      .select({ agentId: plans.agentId })
      .from(plans)
      .where(and(eq(plans.id, undo.id), eq(plans.undoes, original.id)));
    expect(row!.agentId).toBe(noDelete.agent.id);
    await decide(noDelete.ctx, { planId: undo.id, hash: undo.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "reject", reason: "later" });
  });
});
