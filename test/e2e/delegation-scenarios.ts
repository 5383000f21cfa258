import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { createLoginLink } from "../../src/service/sign-in/login-links.ts";
import type { Database } from "../../src/store/db.ts";
import type { TestDatabaseKind } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackPayloads, SlackRequests, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const SIGNING_SECRET = "slack-signing-secret-for-tests";
const REVIEW = "C0REVIEW";

/** A day within the 90 allowed, as a person types it: a week from now. */
const inAWeek = () => new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);

/**
 * Delegating while away through the doors people use, over real HTTP: `/countersign delegate`
 * (through Slack's HTTP door or Socket Mode), a delegate's click shown as "Bob for Alice" in
 * the thread, the App Home's line, and the browser's form. Approvers Alice, Bob, Carol (quorum 1)
 * on "crm"; Dave is no approver.
 */
export function delegationScenarios(kind: TestDatabaseKind, doorKind: "http" | "socket"): void {
  const s = {} as {
    database: Database;
    target: JsonResourceServer;
    slack: SlackEmulator;
    socket: SocketModeEmulator;
    server: RunningServer;
    clicks: SlackRequests;
    door: SlackInteractions;
    agent: AgentIdentity;
    origin: string;
  };
  beforeAll(async () => {
    s.database = await kind.open();
    s.target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await s.target.start();
    s.slack = new SlackEmulator({
      teamId: "T0TEST",
      users: { U0ALICE: { name: "alice", tz: "America/New_York" }, U0HELPER: { name: "helper", is_bot: true } },
    });
    await s.slack.start();
    if (doorKind === "socket") {
      s.socket = new SocketModeEmulator(s.slack);
      await s.socket.start();
    }
    const port = await freePort();
    s.origin = `http://127.0.0.1:${port}`;
    const credentials =
      doorKind === "http" ? { signingSecret: SIGNING_SECRET, appToken: undefined } : { signingSecret: undefined, appToken: s.socket.appToken };
    s.server = await runServer({
      config: {
        ...testConfig({ crm: targetConfig(s.target.url) }),
        port,
        publicUrl: s.origin,
        slack: { enabled: true as const, botToken: s.slack.botToken, ...credentials, apiUrl: s.slack.url, reviewChannel: REVIEW },
      },
      logger: silentLogger,
      database: s.database,
      hostname: "127.0.0.1",
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
    });
    s.clicks = new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
    s.door = doorKind === "http" ? httpInteractions(s.clicks) : s.socket.interactions(new SlackPayloads({ teamId: "T0TEST" }));
    s.agent = await addAgent(s.server.ctx, { name: "delegation-agent" });
  });
  afterAll(async () => {
    await s.server?.close();
    await s.socket?.stop();
    await s.slack?.stop();
    await s.target?.stop();
    await s.database?.close();
  });

  let contact = 0;
  async function proposed(approvers: string[]): Promise<{ plan: PlanView; message: SlackMessage }> {
    const n = contact++;
    const ctx = { ...s.server.ctx, config: { ...s.server.ctx.config, defaults: { ...s.server.ctx.config.defaults, approvers } } };
    const { plan } = await submitPlan(ctx, {
      agent: s.agent,
      request: {
        title: `Update contact ${n}`,
        onBehalfOf: "U0REQUESTER",
        actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: `c${n}@new.example` } }],
      },
    });
    const ts = await waitFor(`the preview of ${plan.id}`, async () => {
      const [row] = await s.database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${plan.id}`);
      return row?.ts;
    });
    return { plan, message: s.slack.message(REVIEW, ts)! };
  }
  /** What `/countersign …` answered the person, through the ack or its response_url. */
  async function command(user: string, text: string): Promise<string> {
    const responseUrl = s.slack.responseUrl();
    const id = responseUrl.split("/").pop()!;
    const ack = await s.door.slashCommand({ user, text, responseUrl });
    expect(ack.acked).toBe(true);
    if (typeof ack.response?.text === "string") return ack.response.text;
    const posted = await waitFor(`the answer to /countersign ${text}`, () => s.slack.responseUrlPosts.find((p) => p.id === id));
    return String((posted.body as { text?: unknown }).text);
  }
  const approveButton = (m: SlackMessage) =>
    (m.blocks ?? [])
      .flatMap((b) => ((b as { type: string }).type === "actions" ? (b as { elements: { action_id: string; value?: string }[] }).elements : []))
      .find((b) => b.action_id === "approve")!;
  const repliesText = (m: SlackMessage) => s.slack.thread(REVIEW, m.ts).map((r) => r.text ?? "");
  const decisionsOf = async (plan: PlanView) =>
    s.database.rows<{ user_id: string; for_user: string | null }>(sql`SELECT user_id, for_user FROM decisions WHERE plan_id = ${plan.id} ORDER BY id`);

  it("/countersign delegate @bob until a day: Bob's click on Alice's plan is recorded as Bob for Alice, and the thread says so; list and login keep working", async () => {
    const until = inAWeek();
    const said = await command("U0ALICE", `delegate <@U0DAVE|dave> until ${until}`);
    expect(said).toMatch(/<@U0DAVE> decides in your place on every target until <!date\^\d+\^/);
    expect(said).toMatch(new RegExp(`\\(the end of ${until}, America.New.York\\)`));
    expect(await command("U0ALICE", "delegate list")).toMatch(/<@U0DAVE> decides for you on every target until/);
    expect(await command("U0DAVE", "delegate list")).toMatch(/You decide for <@U0ALICE> on every target until/);

    const { plan, message } = await proposed(["U0ALICE", "U0CAROL"]);
    const button = approveButton(message);
    await s.door.blockAction({ user: "U0DAVE", actionId: "approve", value: button.value!, channelId: REVIEW, messageTs: message.ts });
    await waitFor("the approval for Alice in the thread", () => repliesText(message).some((t) => t.includes("<@U0DAVE> for <@U0ALICE>")));
    expect(await decisionsOf(plan)).toEqual([{ user_id: "U0DAVE", for_user: "U0ALICE" }]);

    // The other verbs of the command are unchanged by should_escape.
    expect(await command("U0CAROL", "list")).toMatch(/Nothing is waiting for your decision|waiting for your decision/);
    expect(await command("U0CAROL", "login")).toMatch(/one-time sign-in link/);
    expect(await command("U0CAROL", "help")).toContain("/countersign delegate @person until YYYY-MM-DD");
  });

  it("/countersign delegate refuses a bot, oneself, a day past or too far, and a name Slack did not resolve, saying why", async () => {
    expect(await command("U0ALICE", `delegate <@U0HELPER|helper> until ${inAWeek()}`)).toMatch(/Nothing changed: nothing was delegated: U0HELPER is a bot/);
    expect(await command("U0ALICE", `delegate <@U0ALICE|alice> until ${inAWeek()}`)).toMatch(/cannot delegate to yourself/);
    expect(await command("U0ALICE", "delegate <@U0BOB|bob> until 2020-01-01")).toMatch(/2020-01-01 has passed/);
    expect(await command("U0ALICE", "delegate <@U0BOB|bob> until 2099-01-01")).toMatch(/more than 90 days ahead/);
    expect(await command("U0ALICE", `delegate @bob until ${inAWeek()}`)).toMatch(/"@bob" is not a mention Slack resolved/);
    const made = await s.database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM delegations WHERE delegate IN ('U0HELPER', 'U0ALICE', 'U0BOB')`);
    expect(made).toEqual([{ n: 0 }]);
  });

  it("the App Home says who decides for whom", async () => {
    await command("U0CAROL", `delegate <@U0EVE|eve> until ${inAWeek()}`);
    const opened = (user: string) =>
      doorKind === "socket"
        ? s.socket.event({ type: "app_home_opened", user, channel: "D0HOME", tab: "home" })
        : s.clicks.send(
            JSON.stringify({
              type: "event_callback",
              team_id: "T0TEST",
              api_app_id: "A0COUNTERSIGN",
              event: { type: "app_home_opened", user, channel: "D0HOME", tab: "home", event_ts: `${Date.now() / 1000}` },
              event_id: `Ev${Math.random().toString(36).slice(2, 12).toUpperCase()}`,
              event_time: Math.floor(Date.now() / 1000),
            }),
            { contentType: "application/json" },
          );
    await opened("U0CAROL");
    await waitFor("Carol's Home to name Eve", () => JSON.stringify(s.slack.homeOf("U0CAROL")?.blocks ?? []).includes("<@U0EVE> decides for you"));
    await opened("U0EVE");
    await waitFor("Eve's Home to name Carol", () => JSON.stringify(s.slack.homeOf("U0EVE")?.blocks ?? []).includes("You decide for <@U0CAROL>"));
  });

  it("the browser: the form delegates, the delegate's Approve is recorded for the delegator and shown so, and the delegation ends early", async () => {
    const signIn = async (userId: string) => {
      const { url } = await createLoginLink(s.server.ctx, { userId, via: "cli" });
      const res = await fetch(url, { method: "POST", redirect: "manual", headers: { origin: s.origin } });
      const cookie = `cs_session=${/cs_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1]}`;
      const page = await (await fetch(`${s.origin}/delegations`, { headers: { cookie } })).text();
      return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(page)![1]! };
    };
    const post = async (path: string, who: { cookie: string; csrf: string }, form: Record<string, string>) => {
      const res = await fetch(`${s.origin}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie: who.cookie, origin: s.origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: who.csrf, ...form }).toString(),
      });
      return { status: res.status, body: await res.text() };
    };
    const bob = await signIn("U0BOB");
    expect(await (await fetch(`${s.origin}/plans`, { headers: { cookie: bob.cookie } })).text()).toContain('href="/delegations"');
    const refused = await post("/delegations", bob, { delegate: "U0FRANK", until: "2020-01-01" });
    expect(refused.status).toBe(400);
    expect(refused.body).toContain("2020-01-01 has passed");
    expect(refused.body).toContain('value="U0FRANK"'); // what was typed comes back

    const made = await post("/delegations", bob, { delegate: "U0FRANK", until: inAWeek(), targets: "crm" });
    expect(made.status).toBe(200);
    expect(made.body).toContain("U0FRANK decides in your place");
    const id = /data-delegation="([0-9a-f-]{36})"/.exec(made.body)![1]!;

    const { plan } = await proposed(["U0BOB", "U0CAROL"]);
    const frank = await signIn("U0FRANK");
    const page = await (await fetch(`${s.origin}/plans/${plan.id}`, { headers: { cookie: frank.cookie } })).text();
    expect(page).toContain(`action="/plans/${plan.id}/approve"`);
    const approved = await post(`/plans/${plan.id}/approve`, frank, { hash: plan.hash });
    expect(approved.status).toBeLessThan(400);
    expect(await decisionsOf(plan)).toEqual([{ user_id: "U0FRANK", for_user: "U0BOB" }]);
    const after = await (await fetch(`${s.origin}/plans/${plan.id}`, { headers: { cookie: frank.cookie } })).text();
    // Named once Slack has answered for them (in the background), by id until then.
    expect(after.replace(/<[^>]+>/g, "")).toMatch(/Approved by U0FRANK for U0BOB via web/i);

    const ended = await post(`/delegations/${id}/end`, bob, {});
    expect(ended.status).toBe(200);
    expect(ended.body).toContain("Ended: U0FRANK no longer decides for U0BOB");
    const { plan: next } = await proposed(["U0BOB", "U0CAROL"]);
    const later = await (await fetch(`${s.origin}/plans/${next.id}`, { headers: { cookie: frank.cookie } })).text();
    expect(later).not.toContain(`action="/plans/${next.id}/approve"`);
  });
}
