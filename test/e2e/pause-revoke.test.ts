import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Countersign } from "../../src/client/index.ts";
import { outcomeResult } from "../../src/client/openai-agents.ts";
import { createMcpServer } from "../../src/mcp/mcp-server.ts";
import { revokePlan } from "../../src/service/decide/revoke-plan.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import { decide } from "../../src/service/decide/decide.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import { pauseCountersign, resumeCountersign } from "../../src/service/operations/pause.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { pglite } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackRequests, type SlackInteractions } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

const SIGNING_SECRET = "slack-signing-secret-for-tests";
const REVIEW = "C0REVIEW";
const ADMIN = "U0ADMIN";

/**
 * The kill switch and revoke through the doors people and agents use, over real HTTP:
 * the Slack emulator (Revoke button and its reason modal, the pause announcements), the browser
 * (pause/resume for admins with the session's CSRF token, the banner, the revoke form) and the
 * agent API (a held plan). No executor runs here, so approved plans stay approved.
 */
describe("pause and revoke through Slack, the browser and the agent API", () => {
  let database: Database;
  let target: JsonResourceServer;
  let slack: SlackEmulator;
  let server: RunningServer;
  let door: SlackInteractions;
  let origin: string;
  let config: Parameters<typeof runServer>[0]["config"];
  let agent: { id: string; name: string; key: string };
  let n = 0;
  /** The agent's callback URL: every webhook body it received. */
  let hooks: Server;
  const hooked: { status: string; reason?: string; planId: string }[] = [];

  beforeAll(async () => {
    database = await pglite.open();
    target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1, email: "a@old.example" } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
    await target.start();
    slack = new SlackEmulator({ teamId: "T0TEST" });
    await slack.start();
    hooks = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        hooked.push(JSON.parse(body) as (typeof hooked)[number]);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => hooks.listen(0, "127.0.0.1", r));
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const base = testConfig({ crm: targetConfig(target.url) });
    config = {
      ...base,
      port,
      publicUrl: origin,
      admins: [ADMIN],
      webhooks: { allowedHosts: [`127.0.0.1:${(hooks.address() as AddressInfo).port}`], agents: {} },
      slack: { enabled: true as const, botToken: slack.botToken, signingSecret: SIGNING_SECRET, appToken: undefined, apiUrl: slack.url, reviewChannel: REVIEW },
    };
    server = await runServer({
      config,
      logger: silentLogger,
      database,
      hostname: "127.0.0.1",
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
    });
    door = httpInteractions(new SlackRequests({ baseUrl: server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" }));
    agent = await addAgent(server.ctx, { name: "pause-revoke-agent" });
  });
  afterAll(async () => {
    await server?.close();
    await slack?.stop();
    hooks?.closeAllConnections();
    await new Promise<void>((r) => (hooks ? hooks.close(() => r()) : r()));
    await target?.stop();
    await database?.close();
  });

  const statusOf = async (planId: string) => (await database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${planId}`))[0]!.status;
  async function approved(extra: Record<string, unknown> = {}): Promise<PlanView> {
    const { plan } = await submitPlan(server.ctx, {
      agent,
      request: {
        ...extra,
        title: `Pause/revoke plan ${++n}`,
        onBehalfOf: "U0REQUESTER",
        actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { email: `a${n}@new.example` } }],
      },
    });
    await decide(server.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    return plan;
  }
  /** The plan's preview once it shows the status wanted. */
  const preview = (planId: string, status: RegExp) =>
    waitFor(`the preview of ${planId} to show ${status}`, async () => {
      const [row] = await database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${planId}`);
      const message = row && slack.message(REVIEW, row.ts);
      return message && status.test(JSON.stringify(message.blocks)) ? message : undefined;
    });
  const buttons = (m: SlackMessage) =>
    (m.blocks ?? []).flatMap((b) => ((b as { type: string }).type === "actions" ? (b as { elements: { action_id: string; value?: string }[] }).elements : []));

  const signIn = async (userId: string): Promise<{ cookie: string; csrf: string }> => {
    const { url } = await createLoginLink(server.ctx, { userId, via: "cli" });
    const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin } });
    expect(res.status).toBe(303);
    const cookie = `cs_session=${/cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1]}`;
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await get("/plans", cookie)).body)?.[1];
    return { cookie, csrf: csrf! };
  };
  const get = async (path: string, cookie?: string) => {
    const res = await fetch(`${origin}${path}`, { headers: cookie ? { cookie } : {}, redirect: "manual" });
    return { status: res.status, body: await res.text() };
  };
  const post = async (path: string, who: { cookie: string; csrf: string }, form: Record<string, string> = {}) => {
    const res = await fetch(`${origin}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: who.cookie, origin, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: who.csrf, ...form }).toString(),
    });
    return { status: res.status, location: res.headers.get("location"), body: await res.text() };
  };

  it("Slack: an approved plan's preview has Revoke; its modal needs a reason; a stranger is told why not; an approver's revoke ends the plan, said in the thread and the preview", async () => {
    const plan = await approved({ callbackUrl: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook` });
    const message = await preview(plan.id, /Approved/);
    const revoke = buttons(message).find((b) => b.action_id === "revoke");
    expect(revoke?.value).toBe(JSON.stringify({ planId: plan.id, hash: plan.hash }));

    const triggerId = `trigger-${plan.id}`;
    await door.blockAction({ user: "U0BOB", actionId: "revoke", value: revoke!.value!, channelId: REVIEW, messageTs: message.ts, triggerId });
    const opened = await waitFor("the revoke modal", () => slack.views.find((v) => v.trigger_id === triggerId));
    expect(opened.view).toMatchObject({ callback_id: "revoke", type: "modal" });
    const meta = opened.view.private_metadata as string;
    expect((await door.viewSubmission({ user: "U0BOB", callbackId: "revoke", privateMetadata: meta, reason: "  " })).response).toMatchObject({
      response_action: "errors",
      errors: { reason: expect.stringMatching(/say why/i) },
    });

    await door.viewSubmission({ user: "U0MALLORY", callbackId: "revoke", privateMetadata: meta, reason: "mine now" });
    const told = await waitFor("the stranger to be told", () => slack.ephemerals.find((e) => e.user === "U0MALLORY"));
    expect(told.text).toBe("You may not revoke this plan: only the people who may decide it (not its requester) and admins may. Nothing changed.");
    expect(await statusOf(plan.id)).toBe("approved");

    await door.viewSubmission({ user: "U0BOB", callbackId: "revoke", privateMetadata: meta, reason: "Wrong customer <!channel>" });
    await waitFor("the revoke", async () => (await statusOf(plan.id)) === "revoked");
    const after = await preview(plan.id, /Revoked/);
    expect(JSON.stringify(after.blocks)).toContain("Wrong customer");
    expect(buttons(after).map((b) => b.action_id)).toEqual(["view_full_plan"]);
    const reply = await waitFor("the thread reply", () =>
      slack
        .thread(REVIEW, message.ts)
        .map((r) => r.text ?? "")
        .find((t) => /Revoked/.test(t)),
    );
    expect(reply).toContain("<@U0BOB>");
    expect(reply).not.toContain("<!channel>");

    // Clicking the stale message's Revoke again: the person is told it is already revoked.
    await door.viewSubmission({ user: "U0BOB", callbackId: "revoke", privateMetadata: meta, reason: "again" });
    const again = await waitFor("the second revoke to be refused", () => slack.ephemerals.find((e) => e.user === "U0BOB"));
    expect(again.text).toBe("This plan cannot be revoked: it is already revoked. Nothing changed.");

    // The agent hears it through the API with who and why.
    const view = (await (await fetch(`${server.url}/v1/plans/${plan.id}`, { headers: { authorization: `Bearer ${agent.key}` } })).json()) as PlanView;
    expect(view).toMatchObject({ status: "revoked", revocation: { userId: "U0BOB", via: "slack", reason: "Wrong customer <!channel>" } });
    // And through its webhook.
    const hook = await waitFor("the revoked webhook", () => hooked.find((h) => h.planId === plan.id && h.status === "revoked"));
    expect(hook.reason).toBe("Wrong customer <!channel>");
  });

  it("browser: only an admin is offered and may use pause and resume (others get 403 naming why); the banner is on every page while paused; the review channel is told once each way; the agent API says a waiting plan is held", async () => {
    const plan = await approved();
    const admin = await signIn(ADMIN);
    const alice = await signIn("U0ALICE");
    expect((await get("/plans", admin.cookie)).body).toContain('action="/pause"');
    expect((await get("/plans", alice.cookie)).body).not.toContain('action="/pause"');

    const refused = await post("/pause", alice, { reason: "I think so" });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("only admins (the config&#39;s top-level `admins`) may pause or resume Countersign");
    expect((await post("/pause", { ...admin, csrf: "stale" }, { reason: "x" })).status).toBe(403);
    const missing = await post("/pause", admin, { reason: " " });
    expect(missing.status).toBe(400);
    expect(missing.body).toContain("a reason is required");

    // A second replica on the same database, to see the pause reach it.
    const replica = await runServer({
      config: { ...config, port: 0, slack: { enabled: false } },
      logger: silentLogger,
      database,
      hostname: "127.0.0.1",
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 3_600_000,
    });
    const onReplica = async (p: string) => (await fetch(`${replica.url}${p}`, { headers: { cookie: alice.cookie } })).text();
    try {
      expect(await onReplica("/plans")).not.toContain("Countersign is paused");
      expect(await post("/pause", admin, { reason: "Incident 12 <b>CRM</b>" })).toMatchObject({ status: 303, location: "/plans" });
      await waitFor("the other replica's pages to show the pause", async () => (await onReplica("/plans")).includes("Incident 12 &lt;b&gt;CRM&lt;/b&gt;"));
      expect(replica.ctx.pause?.current()).toMatchObject({ by: ADMIN, via: "web" });
    } finally {
      await replica.close();
    }
    for (const path of ["/plans", `/plans/${plan.id}`]) {
      const page = (await get(path, alice.cookie)).body;
      expect(page).toContain("Countersign is paused");
      expect(page).toContain("Incident 12 &lt;b&gt;CRM&lt;/b&gt;");
      expect(page).not.toContain('action="/resume"'); // not an admin
    }
    expect((await get("/plans", admin.cookie)).body).toContain('action="/resume"');
    const held = (await (await fetch(`${server.url}/v1/plans/${plan.id}`, { headers: { authorization: `Bearer ${agent.key}` } })).json()) as PlanView;
    expect(held.held).toMatchObject({ by: "pause", reason: "Incident 12 <b>CRM</b>" });

    expect((await post("/resume", alice)).status).toBe(403);
    expect(await post("/resume", admin)).toMatchObject({ status: 303, location: "/plans" });
    expect((await get("/plans", alice.cookie)).body).not.toContain("Countersign is paused");
    const after = (await (await fetch(`${server.url}/v1/plans/${plan.id}`, { headers: { authorization: `Bearer ${agent.key}` } })).json()) as PlanView;
    expect(after.held?.by).toBe("no_executor"); // no longer the pause: what still holds it is that no executor runs here

    // A pause from the CLI (another process) is announced the same way.
    await pauseCountersign(server.ctx, { operator: { via: "cli", name: "oncall" }, reason: "deploy freeze" });
    await resumeCountersign(server.ctx, { operator: { via: "cli", name: "oncall" } });
    const notices = await waitFor("four announcements", () => {
      const texts = slack
        .messagesIn(REVIEW)
        .map((m) => m.text ?? "")
        .filter((t) => /Countersign (is paused|resumed)/.test(t));
      return texts.length >= 4 && texts;
    });
    expect(notices).toHaveLength(4);
    expect(notices[0]).toMatch(/^:double_vertical_bar: \*Countersign is paused\* by <@U0ADMIN>: Incident 12 &lt;b&gt;CRM&lt;\/b&gt;/);
    expect(notices[1]).toBe(":arrow_forward: *Countersign resumed* by <@U0ADMIN>. Approved plans whose grants are still valid are applied again.");
    expect(notices[2]).toMatch(/paused\* by `oncall` \(CLI\): deploy freeze/);
  });

  it("browser: the plan page offers an approver the revoke form (not a stranger); a refusal is shown on the page; a revoke redirects and the page says who and why", async () => {
    const plan = await approved();
    const bob = await signIn("U0BOB");
    const mallory = await signIn("U0MALLORY");
    expect((await get(`/plans/${plan.id}`, bob.cookie)).body).toContain(`action="/plans/${plan.id}/revoke"`);
    expect((await get(`/plans/${plan.id}`, mallory.cookie)).body).not.toContain(`action="/plans/${plan.id}/revoke"`);

    const stranger = await post(`/plans/${plan.id}/revoke`, mallory, { reason: "no" });
    expect(stranger.status).toBe(403);
    expect(stranger.body).toContain("you may not revoke this plan");
    expect((await post(`/plans/${plan.id}/revoke`, bob, { reason: "" })).status).toBe(400);

    expect(await post(`/plans/${plan.id}/revoke`, bob, { reason: "Ticket was withdrawn" })).toMatchObject({ status: 303, location: `/plans/${plan.id}` });
    const page = (await get(`/plans/${plan.id}`, bob.cookie)).body;
    // By id, or by the name the emulator's users.info gives once the background refresh has asked.
    expect(page).toMatch(/Revoked by (<code class="person-id">U0BOB<\/code>|<span class="person" title="U0BOB">u0bob<\/span>) via web: Ticket was withdrawn/);
    expect(page).not.toContain(`action="/plans/${plan.id}/revoke"`);
    const twice = await post(`/plans/${plan.id}/revoke`, bob, { reason: "again" });
    expect(twice.status).toBe(409);
    expect(twice.body).toContain("it is already revoked");
  });

  it("agents' tools: MCP get_plan says a waiting plan is held and why; once revoked, wait_for_outcome answers revoked: <reason>, as the client and the OpenAI tool do", async () => {
    const plan = await approved();
    const client = new Countersign({ url: server.url, key: agent.key });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(client, "0.0.0-test").connect(serverSide);
    const mcp = new Client({ name: "pause-revoke-test", version: "1.0.0" });
    await mcp.connect(clientSide);
    const call = async (name: string, args: Record<string, unknown>) => {
      const answer = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
      return { text: answer.content.map((c) => (c.type === "text" ? c.text : "")).join("\n"), structured: answer.structuredContent as Record<string, unknown> };
    };
    try {
      await pauseCountersign(server.ctx, { operator: { via: "cli", name: "oncall" }, reason: "freeze for the audit" });
      const held = await call("get_plan", { planId: plan.id });
      expect(held.text).toContain("Held: Countersign is paused (since ");
      expect(held.text).toContain("freeze for the audit); no executor takes a plan until it resumes");
      expect(held.structured.held).toMatchObject({ by: "pause", reason: "freeze for the audit" });
      await resumeCountersign(server.ctx, { operator: { via: "cli", name: "oncall" } });

      await revokePlan(server.ctx, { planId: plan.id, person: { userId: ADMIN, via: "web" }, reason: "audit found a typo" });
      const waited = await call("wait_for_outcome", { planId: plan.id, timeoutSeconds: 30 });
      expect(waited.text.split("\n")[0]).toBe(`Plan ${plan.id}: revoked: audit found a typo`);
      expect(waited.structured).toMatchObject({ status: "revoked", final: true, reason: "audit found a typo" });
      expect(outcomeResult(await client.waitForOutcome(plan.id, { timeoutMs: 30_000 }))).toBe("revoked: audit found a typo");
    } finally {
      await mcp.close();
    }
  });
});
