import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { executePlan } from "../../src/executor/execute-plan.ts";
import { readResource } from "../../src/adapters/http-json.ts";
import { applyHttpJson } from "../../src/adapters/http-json-apply.ts";
import { createReadOnlyHttp } from "../../src/adapters/read-only-http.ts";
import { claimApproved } from "../../src/service/claim-approved.ts";
import { decide } from "../../src/service/decide.ts";
import { getPlan } from "../../src/service/get-plan.ts";
import { reviewPlan } from "../../src/service/review-plan.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import { planMessageOf } from "../../src/slack/deliver.ts";
import { renderPlanMessage } from "../../src/slack/render.ts";
import type { Database } from "../../src/store/db.ts";
import { databaseKinds } from "../support/databases.ts";
import { openHarness, targetConfig, testGrantKeys, WRITE_TOKEN, type Harness } from "../support/harness.ts";

const OLD_PASSWORD = "old-hunter2-password";
const NEW_PASSWORD = "new-correct-horse-battery";
const TARGET_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";

describe.each(databaseKinds)("secrets are never shown, but the executor writes them, on $name", (kind) => {
  let database: Database;
  let h: Harness;
  beforeAll(async () => {
    database = await kind.open();
    h = await openHarness(database);
    h.target.set("/users/1", { id: 1, email: "ana@example.com", password: OLD_PASSWORD, note: `legacy key ${TARGET_KEY}` });
  });
  afterAll(async () => {
    await h?.close();
    await database?.close();
  });

  it("masks previews for reviewers (Slack, browser) and target secrets for the agent; the executor gets and writes the real value", async () => {
    const { plan } = await submitPlan(h.ctx, h.agent, { title: "Reset Ana's password", actions: [{ kind: "http.json", target: "crm", path: "/users/1", op: "merge", body: { password: NEW_PASSWORD } }] });
    const everywhereShown = (value: unknown) => JSON.stringify(value);

    // The agent: its own argument back (so it can recompute the hash), the target's secrets masked.
    const agentView = await getPlan(h.ctx, h.agent, plan.id);
    expect(everywhereShown(agentView.plan)).toContain(NEW_PASSWORD);
    expect(everywhereShown(agentView.preview)).not.toContain(OLD_PASSWORD);
    expect(everywhereShown(agentView.preview)).not.toContain(TARGET_KEY);
    expect(agentView.preview.actions[0]!.changes.map((c) => c.path)).toEqual(["/password"]);

    // Reviewers: nothing secret anywhere, but the change to /password is still listed.
    const reviewed = await reviewPlan(h.ctx, plan.id, { userId: "U0ALICE" });
    const slackMessage = renderPlanMessage(planMessageOf(reviewed.plan));
    for (const shown of [everywhereShown(reviewed), everywhereShown(slackMessage)]) {
      for (const secret of [OLD_PASSWORD, NEW_PASSWORD, TARGET_KEY]) expect(shown).not.toContain(secret);
    }
    expect(everywhereShown(slackMessage)).toContain("password");
    expect(reviewed.plan.preview.actions[0]!.changes).toEqual([{ path: "/password", from: expect.stringContaining("secret"), to: expect.stringContaining("secret") }]);

    // The executor: the real plan, applied with the real value.
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    const claim = (await claimApproved(h.ctx))!;
    expect(everywhereShown(claim.plan)).toContain(NEW_PASSWORD);
    const write = targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    const outcome = await executePlan(claim, {
      keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
      environment: "test",
      now: h.clock.now, // the grant was issued on the harness's clock
      read: (a) => readResource(createReadOnlyHttp(), a.target, write, a.path),
      write: (a, key) => applyHttpJson(fetch, a.target, write, a, key),
    });
    expect(outcome.status).toBe("applied");
    expect(h.target.get("/users/1")).toMatchObject({ password: NEW_PASSWORD });
  });
});
