import { beforeAll, describe, expect, it } from "vitest";
import { Countersign, type FinalOutcome } from "../../src/client/index.ts";
import { outcomeResult } from "../../src/client/openai-agents.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { editPlan } from "../../src/service/edit/index.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";

describe("the client follows a reviewer's edit to the version that counts", () => {
  const s = useServer(pglite, { seed: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`/contacts/${i}`, { id: i, email: "old@example.com" }])) });
  let client: Countersign;
  let n = 0;
  const submitted = () =>
    client.submitPlan({
      title: "Update a contact",
      onBehalfOf: "U0REQUESTER",
      actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n++}`, op: "merge", body: { email: "agent@example.com" } }],
    });
  const edited = async (plan: { id: string; hash: string }) =>
    (await editPlan(s.server.ctx, { planId: plan.id, hash: plan.hash, person: { userId: "U0BOB", via: "slack" }, values: { "0:/email": '"bob@example.com"' } }))
      .plan;

  beforeAll(async () => {
    client = new Countersign({ url: s.server.url, key: (await addAgent(s.server.ctx, { name: "edited-client" })).key });
  });

  it("waitForOutcome on the plan it submitted resolves with the edited version's outcome and who edited it; GET answers the agent for the new id", async () => {
    const plan = await submitted();
    const waiting = client.waitForOutcome(plan.id, { timeoutMs: 60_000 });
    const next = await edited(plan);
    const mine = await client.getPlan(next.id);
    expect(mine.plan.editedBy).toEqual({ userId: "U0BOB", via: "slack" });
    expect((await client.getPlan(plan.id)).supersededBy).toMatchObject({ id: next.id, editedBy: { userId: "U0BOB", via: "slack" } });
    await decide(s.server.ctx, { planId: next.id, hash: next.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "not that either" });
    await expect(waiting).resolves.toMatchObject({ id: next.id, status: "rejected", reason: "not that either", editedBy: { userId: "U0BOB", via: "slack" } });
  });

  it("followEdits: false stops at the plan it was given, superseded", async () => {
    const plan = await submitted();
    const next = await edited(plan);
    const outcome = await client.waitForOutcome(plan.id, { timeoutMs: 10_000, followEdits: false });
    expect(outcome).toMatchObject({ id: plan.id, status: "superseded" });
    expect(outcome.plan.supersededBy).toMatchObject({ id: next.id, editedBy: { userId: "U0BOB" } });
  });

  it("the OpenAI Agents SDK tool tells the model an applied plan carried a reviewer's values", () => {
    const plan = { plan: { actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: "bob@example.com" } }] } };
    const outcome = {
      id: "p2",
      hash: "sha256:x",
      status: "applied",
      approvals: [],
      outcome: { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied", verified: true }] },
      editedBy: { userId: "U0BOB", via: "slack" },
      plan,
    } as unknown as FinalOutcome;
    expect(outcomeResult(outcome)).toBe('applied as edited by U0BOB: /contacts/1 {"email":"bob@example.com"}; read the target for the values written');
  });
});
