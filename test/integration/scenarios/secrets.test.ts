import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runExecutor } from "../../../src/executor/run-executor.ts";
import { executorServer } from "../../../src/executor/server-client.ts";
import { createLogger } from "../../../src/logging/logger.ts";
import type { Config } from "../../../src/config/load.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { getPlan } from "../../../src/service/intake/get-plan.ts";
import { reviewPlan } from "../../../src/service/review/review-plan.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { planMessageOf } from "../../../src/slack/deliver.ts";
import { renderPlanMessage } from "../../../src/slack/render.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness, useServer } from "../../support/use-harness.ts";
import { READ_TOKEN, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../../support/harness.ts";
import { SlackEmulator } from "../../support/slack-emulator.ts";
import { SlackRequests } from "../../support/slack-requests.ts";
import { waitFor } from "../../support/wait-for.ts";

const OLD_PASSWORD = "old-hunter2-password";
const NEW_PASSWORD = "new-correct-horse-battery";
const TARGET_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";

describe.each(databaseKinds)("secrets are never shown, but the executor writes them, on $name", (kind) => {
  const h = useHarness(kind);
  beforeAll(async () => {
    h.target.set("/users/1", { id: 1, email: "ana@example.com", password: OLD_PASSWORD, note: `legacy key ${TARGET_KEY}` });
  });

  it("masks previews for reviewers (Slack, browser) and target secrets for the agent; the executor gets and writes the real value", async () => {
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: {
        title: "Reset Ana's password",
        actions: [{ kind: "http.json", target: "crm", path: "/users/1", op: "merge", body: { password: NEW_PASSWORD } }],
      },
    });
    const everywhereShown = (value: unknown) => JSON.stringify(value);

    // The agent: its own argument back (so it can recompute the hash), the target's secrets masked.
    const agentView = await getPlan(h.ctx, { agent: h.agent, planId: plan.id });
    expect(everywhereShown(agentView.plan)).toContain(NEW_PASSWORD);
    expect(everywhereShown(agentView.preview)).not.toContain(OLD_PASSWORD);
    expect(everywhereShown(agentView.preview)).not.toContain(TARGET_KEY);
    expect(agentView.preview.actions[0]!.changes.map((c) => c.path)).toEqual(["/password"]);

    // Reviewers: nothing secret anywhere, but the change to /password is still listed.
    const reviewed = await reviewPlan(h.ctx, { planId: plan.id, reader: { userId: "U0ALICE" } });
    const slackMessage = renderPlanMessage(planMessageOf(reviewed.plan));
    for (const shown of [everywhereShown(reviewed), everywhereShown(slackMessage)]) {
      for (const secret of [OLD_PASSWORD, NEW_PASSWORD, TARGET_KEY]) expect(shown).not.toContain(secret);
    }
    expect(everywhereShown(slackMessage)).toContain("password");
    expect(reviewed.plan.preview.actions[0]!.changes).toEqual([
      { path: "/password", from: expect.stringContaining("secret"), to: expect.stringContaining("secret") },
    ]);

    // The executor: the real plan, applied with the real value.
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    const claim = (await claimApproved(h.ctx))!;
    expect(everywhereShown(claim.plan)).toContain(NEW_PASSWORD);
    const write = targetConfig(h.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } });
    // The grant was issued on the harness's clock.
    const outcome = await executePlan(claim, executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crm: write }, h.clock.now));
    expect(outcome.status).toBe("applied");
    expect(h.target.get("/users/1")).toMatchObject({ password: NEW_PASSWORD });
  });
});

/**
 * Nothing secret in any log line or anything sent to Slack, whatever happens: a whole run over
 * real HTTP (agent submit with its key, Slack preview and click, executor apply) plus a query that
 * fails with a plan's secrets among its parameters. Every log line of the server and the executor
 * and every call to the Slack emulator is searched for every planted value.
 */
describe.each(databaseKinds)("no secret in logs or Slack calls, on $name", (kind) => {
  const SIGNING_SECRET = "slack-signing-secret-planted-0001";
  const EXECUTOR_TOKEN = "executor-token-planted-0123456789";
  const BODY_PASSWORD = "planted-password-in-plan-body";
  const BODY_KEY = "sk-proj-PLANTEDkeyLIKEstring0123456789";
  const FAILING_PASSWORD = "planted-password-in-failing-query";
  const REFUSED_MARK = "refuse-this-plan-at-the-database";
  const lines: string[] = [];
  const sink = { write: (line: string) => void lines.push(line) };
  let slack: SlackEmulator;
  const s = useServer(kind, {
    seed: { "/users/7": { id: 7, password: OLD_PASSWORD, note: `legacy key ${TARGET_KEY}` } },
    config: async (targetUrl): Promise<Config> => {
      slack = new SlackEmulator({ teamId: "T0TEST" });
      await slack.start();
      return {
        ...testConfig({ crm: targetConfig(targetUrl) }),
        logLevel: "debug",
        executorToken: EXECUTOR_TOKEN,
        slack: {
          enabled: true as const,
          botToken: slack.botToken,
          signingSecret: SIGNING_SECRET,
          appToken: undefined,
          apiUrl: slack.url,
          reviewChannel: "C0REVIEW",
          escalationChannel: undefined,
          decisionRetrySeconds: 120,
        },
      };
    },
    run: { logger: createLogger("debug", sink), deliverMs: 50 },
  });
  let agentKey: string;
  beforeAll(async () => {
    agentKey = (await addAgent(s.server.ctx, { name: "secretive-agent" })).key;
  });
  afterAll(async () => {
    await slack?.stop();
  });

  const submit = (body: unknown) =>
    fetch(`${s.server.url}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${agentKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const passwordChange = (title: string, password: string) => ({
    title,
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "crm", path: "/users/7", op: "merge", body: { password, note: `rotated, new key ${BODY_KEY}` } }],
  });

  it("plants secrets everywhere, runs a plan through, fails a query on purpose, and finds none of them in the logs or in Slack", async () => {
    // 1. A plan with a password and a key-like string, submitted with the agent's key, previewed in Slack, approved there, applied.
    const submitted = await submit(passwordChange("Rotate the service account", BODY_PASSWORD));
    expect(submitted.status).toBe(201);
    const plan = ((await submitted.json()) as { plan: { id: string; hash: string } }).plan;
    const ts = await waitFor(
      "the Slack preview",
      async () => (await s.database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${plan.id}`))[0]?.ts,
    );
    const clicks = new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
    const approve = (slack.message("C0REVIEW", ts)!.blocks ?? [])
      .flatMap((b) => ((b as { type: string }).type === "actions" ? (b as { elements: { action_id: string; value?: string }[] }).elements : []))
      .find((e) => e.action_id === "approve")!;
    expect((await clicks.blockAction({ user: "U0ALICE", actionId: "approve", value: approve.value!, channelId: "C0REVIEW", messageTs: ts })).status).toBe(200);
    const executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
      environment: "test",
      targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: createLogger("debug", sink).child({ process: "executor" }),
    });
    try {
      await waitFor(
        "the plan to be applied",
        async () => (await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]?.status === "applied",
      );
    } finally {
      await executor.stop();
    }
    expect(s.target.get("/users/7")).toMatchObject({ password: BODY_PASSWORD });
    await waitFor("Slack told of the outcome", () => slack.calls.some((c) => /applied/i.test(c.raw)));

    // 2. A query that fails with the plan document (and its password) among its parameters.
    await s.database.db.execute(sql.raw(`ALTER TABLE plans ADD CONSTRAINT secrets_test_refuses CHECK (strpos(document, '${REFUSED_MARK}') = 0)`));
    try {
      const refused = await submit(passwordChange(REFUSED_MARK, FAILING_PASSWORD));
      expect(refused.status).toBe(500);
    } finally {
      await s.database.db.execute(sql`ALTER TABLE plans DROP CONSTRAINT secrets_test_refuses`);
    }
    const failure = await waitFor("the failed query in the log", () => lines.find((l) => l.includes("secrets_test_refuses")));

    // 3. Every log line and every Slack call, searched for every planted value.
    const planted = { BODY_PASSWORD, BODY_KEY, FAILING_PASSWORD, OLD_PASSWORD, TARGET_KEY, agentKey, READ_TOKEN, WRITE_TOKEN, EXECUTOR_TOKEN, SIGNING_SECRET };
    const logText = lines.join("");
    const slackText = JSON.stringify(slack.calls.map(({ method, body, raw, headers, answer }) => ({ method, body, raw, headers, answer })));
    expect(lines.length).toBeGreaterThan(5);
    expect(slack.calls.length).toBeGreaterThan(1);
    for (const [name, value] of Object.entries(planted)) {
      expect(logText.includes(value), `${name} is in a log line`).toBe(false);
      expect(slackText.includes(value), `${name} was sent to Slack`).toBe(false);
    }
    // The failure's line still says what failed: the statement and the database's code, not the values.
    expect(JSON.parse(failure)).toMatchObject({
      level: 50,
      err: { message: expect.stringMatching(/^Failed query: (WITH first AS \()?insert into "?plans"? /i), cause: { code: "23514" } },
    });
  });
});
