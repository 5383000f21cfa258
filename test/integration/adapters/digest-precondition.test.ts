import { beforeAll, describe, expect, it } from "vitest";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { planMessageOf } from "../../../src/slack/deliver.ts";
import { renderPlanMessage } from "../../../src/slack/render.ts";
import { reviewPlan } from "../../../src/service/review/review-plan.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";
import { targetConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";

/** A target that gives no ETag: refused by default (scenario 7), accepted as a weaker digest precondition when configured. */
describe.each(databaseKinds)("digest preconditions on $name", (kind) => {
  const h = useHarness(kind, { targets: (url) => ({ crm: targetConfig(url), plain: targetConfig(url, { precondition: "digest" }) }) });
  beforeAll(async () => {
    h.target.omitEtag = true;
  });

  const request = (target: string, path: string) => ({
    title: "no etag",
    actions: [{ kind: "http.json", target, path, op: "merge", body: { email: "new@example.com" } }],
  });
  const execute = async () => {
    const write = targetConfig(h.target.url, { precondition: "digest", write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    return executePlan(
      (await claimApproved(h.ctx))!,
      executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crm: write, plain: write }, h.clock.now),
    );
  };

  it("without digest mode the preview fails clearly", async () => {
    await expect(submitPlan(h.ctx, { agent: h.agent, request: request("crm", "/contacts/1") })).rejects.toMatchObject({
      code: "preview_failed",
      message: expect.stringContaining("precondition: digest"),
    });
  });

  it("in digest mode the plan binds a digest of the state read, is marked weaker, and applies when nothing changed", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: request("plain", "/contacts/1") });
    expect(plan.plan.actions[0]!.precondition).toEqual({ digest: fingerprint({ id: 1, name: "Ana Lima", email: "ana@old.example" }) });
    expect(plan.preview.actions[0]!.precondition).toBe("digest");
    expect(JSON.stringify(renderPlanMessage(planMessageOf((await reviewPlan(h.ctx, { planId: plan.id, reader: { userId: "U0ALICE" } })).plan)))).toContain(
      "weaker than an ETag",
    );
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    const before = h.target.writes().length;
    expect((await execute()).status).toBe("applied");
    const [write] = h.target.writes().slice(before);
    expect(write!.headers["if-match"]).toBeUndefined();
    expect(h.target.get("/contacts/1")).toMatchObject({ email: "new@example.com" });
  });

  it("in digest mode a change since the preview is still caught: stale, nothing written", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: request("plain", "/contacts/2") });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    h.target.set("/contacts/2", { id: 2, name: "Bruno Costa", email: "someone-else@example.com" });
    const before = h.target.writes().length;
    const outcome = await execute();
    expect(outcome.status).toBe("stale");
    expect(outcome.actions[0]).toMatchObject({ status: "stale", expected: (plan.plan.actions[0]!.precondition as { digest: string }).digest });
    expect(h.target.writes().length).toBe(before);
  });
});
