import { RunContext } from "@openai/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Countersign, type PlanRequestInput, type PlanView } from "../../src/client/index.ts";
import { countersignTool } from "../../src/client/openai-agents.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { expireDue } from "../../src/service/watch/expire-due.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { waitFor } from "../support/wait-for.ts";

const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";

/** A client that remembers what it proposed, so the test can play the reviewer on it. */
class RecordingClient extends Countersign {
  readonly proposed: PlanView[] = [];
  override async submitPlan(request: PlanRequestInput, options: { signal?: AbortSignal } = {}): Promise<PlanView> {
    const plan = await super.submitPlan(request, options);
    this.proposed.push(plan);
    return plan;
  }
}

/**
 * The Agents SDK tool, invoked as the SDK's runner would (no model, no network beyond the
 * local s.server): proposals go to a real s.server, people decide through the service, and a real
 * executor applies approved plans to a real s.target.
 */
describe("countersignTool for the OpenAI Agents SDK", () => {
  const s = useServer(pglite, {
    seed: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
    // The server reads the target only; the write header is the executor's alone.
    config: (url) => ({ ...testConfig({ crm: targetConfig(url) }), executorToken: EXECUTOR_TOKEN }),
    // The sweeper never runs by itself: expiry is provoked by hand.
    run: { sweepMs: 3_600_000, clock: () => new Date(Date.now() + clockOffsetMs) },
  });
  let executor: { stop(): Promise<void> };
  let client: RecordingClient;
  /** The server's clock runs this far ahead of the real one. */
  let clockOffsetMs = 0;

  const parameters = z.object({ contactId: z.int().min(0), email: z.string() });
  const makeTool = (toPlan: (args: z.output<typeof parameters>) => PlanRequestInput = emailPlan, timeoutMs?: number) =>
    countersignTool({
      client,
      name: "update_contact_email",
      description: "Change a contact's email address in the CRM.",
      parameters,
      toPlan,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
  const emailPlan = ({ contactId, email }: { contactId: number; email: string }): PlanRequestInput => ({
    title: `Update the email of contact ${contactId}`,
    reason: "The customer asked in ticket 4411",
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "crm", path: `/contacts/${contactId}`, op: "merge", body: { email } }],
  });
  /** Invokes the tool as the runner does, and returns its result with the plan it proposed once it is pending. */
  const invoke = (tool: ReturnType<typeof makeTool>, args: object, callId?: string) => {
    const before = client.proposed.length;
    const result = tool.invoke(
      new RunContext(),
      JSON.stringify(args),
      callId ? { toolCall: { type: "function_call", callId, name: tool.name, arguments: JSON.stringify(args) } } : undefined,
    );
    const proposed = waitFor("the proposal", () => client.proposed[before]);
    return { result, proposed };
  };
  const reject = (plan: PlanView, reason: string) =>
    decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "slack" }, verdict: "reject", reason });
  const approve = (plan: PlanView) => decide(s.server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });

  beforeAll(async () => {
    executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
      environment: "test",
      targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
    });
    client = new RecordingClient({ url: s.server.url, key: (await addAgent(s.server.ctx, { name: "openai-agent" })).key });
  });

  afterAll(async () => {
    await executor?.stop();
  });

  it("is a strict SDK function tool over the zod parameters, telling the model it only proposes", () => {
    const tool = makeTool();
    expect(tool.type).toBe("function");
    expect(tool.name).toBe("update_contact_email");
    expect(tool.strict).toBe(true);
    expect(tool.parameters).toMatchObject({
      type: "object",
      properties: { contactId: { type: "integer" }, email: { type: "string" } },
      required: ["contactId", "email"],
    });
    expect(tool.description).toContain("Change a contact's email address in the CRM.");
    expect(tool.description).toContain("does not make the change");
    expect(tool.description).toContain('"stale: target changed, re-plan"');
  });

  it('approved → the executor applies it → "applied", and the target holds the change', async () => {
    const { result, proposed } = invoke(makeTool(), { contactId: 1, email: "ana@new.example" });
    const plan = await proposed;
    expect(plan.status).toBe("pending");
    expect(s.target.get("/contacts/1")).toEqual({ id: 1, email: "c1@old.example" });
    await approve(plan);
    expect(await result).toBe("applied");
    expect(s.target.get("/contacts/1")).toEqual({ id: 1, email: "ana@new.example" });
  });

  it('rejected → "rejected: <reason>", and nothing is written', async () => {
    const writes = s.target.writes().length;
    const { result, proposed } = invoke(makeTool(), { contactId: 2, email: "x@new.example" });
    await reject(await proposed, "wrong customer");
    expect(await result).toBe("rejected: wrong customer");
    expect(s.target.writes().length).toBe(writes);
    expect(s.target.get("/contacts/2")).toEqual({ id: 2, email: "c2@old.example" });
  });

  it('target changed after the preview → "stale: target changed, re-plan"', async () => {
    const { result, proposed } = invoke(makeTool(), { contactId: 3, email: "x@new.example" });
    const plan = await proposed;
    s.target.set("/contacts/3", { id: 3, email: "someone-else@example.com" });
    // The Approve re-reads the target: refused, and the plan is stale before any executor sees it.
    await expect(approve(plan)).rejects.toMatchObject({ code: "target_changed" });
    expect(await result).toBe("stale: target changed, re-plan");
    expect(s.target.get("/contacts/3")).toEqual({ id: 3, email: "someone-else@example.com" });
  });

  it('withdrawn → "cancelled"', async () => {
    const { result, proposed } = invoke(makeTool(), { contactId: 4, email: "x@new.example" });
    await client.cancel((await proposed).id);
    expect(await result).toBe("cancelled");
  });

  it('a proposal the server refuses → "refused: <code>: <message>", and no plan exists', async () => {
    const tool = makeTool((args) => ({
      ...emailPlan(args),
      actions: [{ kind: "http.json", target: "nope", path: `/contacts/${args.contactId}`, op: "delete" }],
    }));
    const before = client.proposed.length;
    const result = await tool.invoke(new RunContext(), JSON.stringify({ contactId: 5, email: "x@new.example" }));
    expect(result).toMatch(/^refused: unknown_target: .*nope/);
    expect(client.proposed.length).toBe(before);
  });

  it("arguments that do not fit the parameters never reach Countersign", async () => {
    const before = client.proposed.length;
    const result = await makeTool().invoke(new RunContext(), JSON.stringify({ contactId: "five" }));
    expect(String(result)).toContain("Invalid JSON input for tool");
    expect(client.proposed.length).toBe(before);
  });

  it("the same model call invoked twice finds its plan instead of proposing again", async () => {
    const tool = makeTool();
    const first = invoke(tool, { contactId: 6, email: "x@new.example" }, "call_abc");
    const plan = await first.proposed;
    await reject(plan, "not now");
    expect(await first.result).toBe("rejected: not now");
    const again = invoke(tool, { contactId: 6, email: "x@new.example" }, "call_abc");
    expect((await again.proposed).id).toBe(plan.id);
    expect(await again.result).toBe("rejected: not now");
  });

  it('still undecided when timeoutMs passes → "pending: …", the plan left open', async () => {
    const { result, proposed } = invoke(makeTool(emailPlan, 300), { contactId: 7, email: "x@new.example" });
    const plan = await proposed;
    expect(await result).toMatch(new RegExp(`^pending: .*plan ${plan.id} is still open`));
    expect((await client.getPlan(plan.id)).status).toBe("pending");
  });

  it('nobody decides in time → "expired"', async () => {
    const { result, proposed } = invoke(
      makeTool((args) => ({ ...emailPlan(args), ttlSeconds: 60 })),
      { contactId: 8, email: "x@new.example" },
    );
    const plan = await proposed;
    clockOffsetMs += 61_000;
    expect(await expireDue(s.server.ctx)).toContain(plan.id);
    expect(await result).toBe("expired");
  });
});
