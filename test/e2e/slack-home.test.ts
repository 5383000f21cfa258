import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { pglite } from "../support/databases.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type JsonObject } from "../support/slack-emulator.ts";
import { SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

const SIGNING_SECRET = "slack-signing-secret-for-home-tests";

/**
 * App Home over real HTTP: Countersign's server with its Slack door, the emulator as Slack's Web
 * API (views.publish recorded per user), and signed requests as Slack's side (events and clicks).
 */
describe("Slack App Home on PGlite over HTTP", () => {
  const s = {} as { database: Database; target: JsonResourceServer; slack: SlackEmulator; server: RunningServer; clicks: SlackRequests; agent: AgentIdentity };

  beforeAll(async () => {
    s.database = await pglite.open();
    s.target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await s.target.start();
    s.slack = new SlackEmulator({ teamId: "T0TEST" });
    await s.slack.start();
    s.slack.setUsergroup("S0REVIEWERS", ["U0GROUPIE", "U0ALICE"]);
    const config = {
      ...testConfig({ crm: targetConfig(s.target.url), grouped: targetConfig(s.target.url, { policy: { approvers: ["S0REVIEWERS"], requiredApprovals: 1 } }) }),
      slack: {
        enabled: true as const,
        botToken: s.slack.botToken,
        signingSecret: SIGNING_SECRET,
        appToken: undefined,
        apiUrl: s.slack.url,
        reviewChannel: "C0REVIEW",
      },
    };
    s.server = await runServer({
      config,
      logger: silentLogger,
      database: s.database,
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
    });
    s.clicks = new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
    s.agent = await addAgent(s.server.ctx, { name: "home-agent" });
  });

  afterAll(async () => {
    await s.server?.close();
    await s.slack?.stop();
    await s.target?.stop();
    await s.database?.close();
  });

  let contact = 0;
  const submit = async (overrides: Record<string, unknown> = {}): Promise<PlanView> => {
    const n = contact++;
    const { plan } = await submitPlan(s.server.ctx, {
      agent: s.agent,
      request: {
        title: `Update contact ${n}`,
        onBehalfOf: "U0REQUESTER",
        actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: `c${n}@new.example` } }],
        ...overrides,
      },
    });
    return plan;
  };

  const buttonsOf = (view: JsonObject | undefined) =>
    ((view?.blocks ?? []) as { type: string; elements?: { action_id: string; value?: string }[] }[]).flatMap((b) =>
      b.type === "actions" ? (b.elements ?? []) : [],
    );
  /** The plan ids a user's Home offers Approve for, top to bottom. */
  const approvable = (user: string) =>
    buttonsOf(s.slack.homeOf(user))
      .filter((b) => b.action_id === "approve")
      .map((b) => (JSON.parse(b.value!) as { planId: string }).planId);
  const homeText = (user: string) => JSON.stringify(s.slack.homeOf(user)?.blocks ?? []);
  const publishesTo = (user: string) => s.slack.published.filter((p) => p.user === user).length;
  const statusOf = async (plan: PlanView) => (await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]!.status;

  const homeOpened = (user: string, teamId = "T0TEST") =>
    s.clicks.send(
      JSON.stringify({
        type: "event_callback",
        team_id: teamId,
        api_app_id: "A0COUNTERSIGN",
        event: { type: "app_home_opened", user, channel: "D0HOME", tab: "home", event_ts: `${Date.now() / 1000}` },
        event_id: `Ev${Math.random().toString(36).slice(2, 12).toUpperCase()}`,
        event_time: Math.floor(Date.now() / 1000),
      }),
      { contentType: "application/json" },
    );

  /** A click on a button of the user's Home tab: Slack sends no channel, and the container is the view. */
  const clickOnHome = (user: string, actionId: "approve" | "reject", value: string, triggerId?: string) =>
    s.clicks.blockAction({
      user,
      actionId,
      value,
      messageTs: "",
      ...(triggerId ? { triggerId } : {}),
      payload: { container: { type: "view", view_id: "V0HOME" }, channel: undefined, message: undefined, view: { id: "V0HOME", type: "home", blocks: [] } },
    });

  it("opening the tab with nothing waiting shows the empty state; a plan then reaches every decider's Home (listed users, group members), never the requester's", async () => {
    const opened = await homeOpened("U0DAVE");
    expect(opened.status).toBe(200);
    await waitFor("Dave's empty Home", () => homeText("U0DAVE").includes("Nothing is waiting for your decision"));

    const plan = await submit();
    const grouped = await submit({ actions: [{ kind: "http.json", target: "grouped", path: "/contacts/19", op: "merge", body: { email: "g@new.example" } }] });
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL"]) await waitFor(`${user}'s Home to list the plan`, () => approvable(user).includes(plan.id));
    await waitFor("the group member's Home to list the group's plan", () => approvable("U0GROUPIE").includes(grouped.id));
    await waitFor("Alice (listed and in the group) to see both", () => approvable("U0ALICE").includes(grouped.id));
    expect(approvable("U0BOB")).not.toContain(grouped.id);
    expect(approvable("U0GROUPIE")).not.toContain(plan.id);
    // The person a plan is for never decides it: their Home is never published for it.
    expect(publishesTo("U0REQUESTER")).toBe(0);
    // Same buttons as the preview: value bound to the exact hash.
    const approve = buttonsOf(s.slack.homeOf("U0BOB")).find((b) => b.action_id === "approve" && b.value?.includes(plan.id))!;
    expect(JSON.parse(approve.value!)).toEqual({ planId: plan.id, hash: plan.hash });
  });

  it("lists soonest expiry first, and app_home_opened rebuilds it from the database", async () => {
    const later = await submit({ ttlSeconds: 3000 });
    const sooner = await submit({ ttlSeconds: 120 });
    s.slack.published.length = 0;
    await homeOpened("U0CAROL");
    const order = await waitFor("Carol's rebuilt Home", () => publishesTo("U0CAROL") > 0 && approvable("U0CAROL"));
    expect(order.indexOf(sooner.id)).toBeGreaterThanOrEqual(0);
    expect(order.indexOf(sooner.id)).toBeLessThan(order.indexOf(later.id));
    const expiries = await s.database.rows<{ id: string; expires_at: string }>(
      sql`SELECT id, expires_at FROM plans WHERE id IN (${sql.join(
        order.map((id) => sql`${id}`),
        sql`, `,
      )})`,
    );
    const at = new Map(expiries.map((r) => [r.id, new Date(r.expires_at).getTime()]));
    expect(order.map((id) => at.get(id)!)).toEqual([...order.map((id) => at.get(id)!)].sort((a, b) => a - b));
  });

  it("a foreign workspace's app_home_opened publishes nothing", async () => {
    s.slack.published.length = 0;
    const opened = await homeOpened("U0MALLORY", "T0OTHER");
    expect(opened.status).toBe(200);
    await homeOpened("U0DAVE"); // a later event from our workspace: once it is published, the foreign one was handled first
    await waitFor("Dave's Home", () => publishesTo("U0DAVE") > 0);
    expect(publishesTo("U0MALLORY")).toBe(0);
  });

  it("Approve on the Home tab decides through the channel's listener; the plan leaves every Home; a stale click is answered on the clicker's Home", async () => {
    const plan = await submit();
    await waitFor("Bob's Home to list it", () => approvable("U0BOB").includes(plan.id));
    const value =
      buttonsOf(s.slack.homeOf("U0ALICE")).find((b) => b.action_id === "approve" && b.value?.includes(plan.id))?.value ??
      (await waitFor("Alice's button", () => buttonsOf(s.slack.homeOf("U0ALICE")).find((b) => b.action_id === "approve" && b.value?.includes(plan.id))?.value));
    const stale = buttonsOf(s.slack.homeOf("U0BOB")).find((b) => b.action_id === "approve" && b.value?.includes(plan.id))!.value!;

    const ack = await clickOnHome("U0ALICE", "approve", value);
    expect(ack.status).toBe(200);
    await waitFor("approval", async () => (await statusOf(plan)) === "approved");
    const [decision] = await s.database.rows<{ user_id: string; via: string }>(sql`SELECT user_id, via FROM decisions WHERE plan_id = ${plan.id}`);
    expect(decision).toEqual({ user_id: "U0ALICE", via: "slack" });
    for (const user of ["U0ALICE", "U0BOB", "U0CAROL"]) await waitFor(`the plan to leave ${user}'s Home`, () => !approvable(user).includes(plan.id));

    await clickOnHome("U0BOB", "approve", stale);
    await waitFor("Bob to be told on his Home", () => homeText("U0BOB").includes("already approved"));
    expect(s.slack.ephemerals.filter((e) => e.user === "U0BOB")).toEqual([]);
    expect(await s.database.rows(sql`SELECT 1 FROM decisions WHERE plan_id = ${plan.id} AND user_id = 'U0BOB'`)).toEqual([]);
  });

  it("Reject on the Home tab opens the reason dialog and its submission rejects the plan", async () => {
    const plan = await submit();
    const button = await waitFor("Carol's reject button", () =>
      buttonsOf(s.slack.homeOf("U0CAROL")).find((b) => b.action_id === "reject" && b.value?.includes(plan.id)),
    );
    const triggerId = `trigger-home-${plan.id}`;
    await clickOnHome("U0CAROL", "reject", button.value!, triggerId);
    const opened = await waitFor("the reject modal", () => s.slack.views.find((v) => v.trigger_id === triggerId));
    await s.clicks.viewSubmission({ user: "U0CAROL", callbackId: "reject", privateMetadata: opened.view.private_metadata as string, reason: "Not this one" });
    await waitFor("rejection", async () => (await statusOf(plan)) === "rejected");
    await waitFor("the plan to leave Carol's Home", () => !approvable("U0CAROL").includes(plan.id));
  });
});
