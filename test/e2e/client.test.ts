import { beforeAll, describe, expect, it } from "vitest";
import { Countersign, CountersignError, type PlanRequestInput } from "../../src/client/index.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { databaseKinds } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";

describe.each(databaseKinds)("the TypeScript client against a real server on $name", (kind) => {
  const s = useServer(kind, { seed: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`/contacts/${i}`, { id: i, email: "old@example.com" }])) });
  let client: Countersign;
  let n = 0;
  const request = (): PlanRequestInput => ({
    title: "Update a contact",
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n++}`, op: "merge", body: { email: "new@example.com" } }],
  });

  beforeAll(async () => {
    client = new Countersign({ url: s.server.url + "/", key: (await addAgent(s.server.ctx, { name: "client-agent" })).key });
  });

  it("submits, reads back and cancels a plan", async () => {
    const plan = await client.submitPlan(request());
    expect(plan).toMatchObject({ status: "pending", hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect((await client.getPlan(plan.id)).hash).toBe(plan.hash);
    expect((await client.cancel(plan.id)).status).toBe("cancelled");
    expect((await client.events(plan.id)).map((e) => e.type)).toEqual(["plan.submitted", "plan.cancelled"]);
  });

  it("waits for the outcome: a rejection with its reason", async () => {
    const plan = await client.submitPlan(request());
    const waiting = client.waitForOutcome(plan.id, { timeoutMs: 30_000 });
    await decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "reject", reason: "not today" });
    await expect(waiting).resolves.toMatchObject({ id: plan.id, status: "rejected", reason: "not today", approvals: [] });
  });

  it("gives up after timeoutMs with a typed timeout, and stops when aborted", async () => {
    const plan = await client.submitPlan(request());
    await expect(client.waitForOutcome(plan.id, { timeoutMs: 300 })).rejects.toMatchObject({ code: "timeout" });
    const abort = new AbortController();
    const waiting = client.waitForOutcome(plan.id, { signal: abort.signal });
    setTimeout(() => abort.abort(new Error("agent shutting down")), 100);
    await expect(waiting).rejects.toThrow("agent shutting down");
  });

  it("turns server refusals into typed errors with the server's code and issues", async () => {
    const refused = await client
      .submitPlan({ title: "x", actions: [{ kind: "http.json", target: "nope", path: "/a", op: "delete" }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CountersignError);
    expect(refused).toMatchObject({ code: "unknown_target", status: 422, issues: [{ path: "/actions/0/target" }] });
    await expect(client.getPlan("00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ code: "not_found", status: 404 });
    await expect(new Countersign({ url: s.server.url, key: "csk_wrong" }).getPlan("x")).rejects.toMatchObject({ code: "unauthorized", status: 401 });
    await expect(new Countersign({ url: "http://127.0.0.1:1", key: "k" }).getPlan("x")).rejects.toMatchObject({ code: "network" });
  });
});
