import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { loadVerifyingKeys } from "../../src/grant/keys.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/add-agent.ts";
import type { AgentIdentity } from "../../src/service/authenticate-agent.ts";
import type { PlanView } from "../../src/service/plan-view.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { openSlackDoor } from "../../src/slack/slack-door.ts";
import { databaseKinds, pglite, type TestDatabaseKind } from "../support/databases.ts";
import { openHarness, READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { SlackPayloads, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";
const REVIEW = "C0REVIEW";

/**
 * Countersign's Slack door in Socket Mode (SLACK_APP_TOKEN set, no signing secret, no public URL):
 * the emulator plays Slack's Web API and its WebSocket side, and every click, modal submission and
 * slash command arrives as an envelope that must be acknowledged by its id.
 */
function socketSuite(kind: TestDatabaseKind) {
  const s = {} as {
    database: Database;
    target: JsonResourceServer;
    slack: SlackEmulator;
    socket: SocketModeEmulator;
    server: RunningServer;
    slackDoor: SlackInteractions;
    agent: AgentIdentity;
  };
  beforeAll(async () => {
    s.database = await kind.open();
    s.target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await s.target.start();
    s.slack = new SlackEmulator({ teamId: "T0TEST" });
    await s.slack.start();
    s.socket = new SocketModeEmulator(s.slack);
    await s.socket.start();
    const config = {
      ...testConfig({ crm: targetConfig(s.target.url), vault: targetConfig(s.target.url, { policy: { requiredApprovals: 2 } }) }),
      executorToken: EXECUTOR_TOKEN,
      slack: { enabled: true as const, botToken: s.slack.botToken, signingSecret: undefined, appToken: s.socket.appToken, apiUrl: s.slack.url, reviewChannel: REVIEW, escalationChannel: undefined },
    };
    s.server = await runServer({ config, logger: silentLogger, database: s.database, grantKey: (await testGrantKeys()).signing, sweepMs: 3_600_000, remindMs: 3_600_000, deliverMs: 50 });
    s.slackDoor = s.socket.interactions(new SlackPayloads({ teamId: "T0TEST" }));
    s.agent = await addAgent(s.server.ctx, { name: "socket-agent" });
  });
  afterAll(async () => {
    await s.server?.close();
    await s.socket?.stop();
    await s.slack?.stop();
    await s.target?.stop();
    await s.database?.close();
  });
  return s;
}

type Suite = ReturnType<typeof socketSuite>;

let contact = 0;
async function proposed(s: Suite, overrides: Record<string, unknown> = {}): Promise<{ plan: PlanView; message: SlackMessage }> {
  const n = contact++ % 20;
  const { plan } = await submitPlan(s.server.ctx, s.agent, {
    title: `Update contact ${n}`,
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: `c${n}@new.example` } }],
    ...overrides,
  });
  const ts = await waitFor(`the preview of ${plan.id}`, async () => {
    const [row] = await s.database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${plan.id}`);
    return row?.ts;
  });
  return { plan, message: s.slack.message(REVIEW, ts)! };
}

function buttonValue(message: SlackMessage, actionId: "approve" | "reject"): string {
  const buttons = (message.blocks ?? []).flatMap((b) => ((b as { type: string }).type === "actions" ? ((b as { elements: { action_id: string; value?: string }[] }).elements) : []));
  return buttons.find((b) => b.action_id === actionId)!.value!;
}

const click = (s: Suite, message: SlackMessage, user: string, actionId: "approve" | "reject", triggerId?: string) =>
  s.slackDoor.blockAction({ user, actionId, value: buttonValue(message, actionId), channelId: REVIEW, messageTs: message.ts, ...(triggerId && { triggerId }) });

const statusOf = async (s: Suite, plan: PlanView) => (await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]!.status;
const decisionsOf = async (s: Suite, plan: PlanView) =>
  s.database.rows<{ user_id: string; verdict: string; via: string }>(sql`SELECT user_id, verdict, via FROM decisions WHERE plan_id = ${plan.id} ORDER BY id`);
const ephemeralsFor = (s: Suite, user: string) => s.slack.ephemerals.filter((e) => e.user === user);
const repliesText = (s: Suite, message: SlackMessage) => s.slack.thread(REVIEW, message.ts).map((r) => r.text ?? "");

describe.each(databaseKinds)("Slack door over Socket Mode on $name", (kind) => {
  const s = socketSuite(kind);

  it("connects with the app-level token: apps.connections.open, then a greeted WebSocket", () => {
    const opens = s.slack.callsTo("apps.connections.open");
    expect(opens.length).toBeGreaterThanOrEqual(1);
    expect(opens[0]!.headers.authorization).toBe(`Bearer ${s.socket.appToken}`);
    expect(opens[0]!.answer?.body).toMatchObject({ ok: true });
    expect(s.socket.openConnections).toHaveLength(1);
  });

  it("serves no /slack/events: nothing arrives over HTTP in Socket Mode", async () => {
    const res = await fetch(`${s.server.url}/slack/events`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "payload=%7B%7D" });
    expect(res.status).toBe(404);
  });

  it("approve → acknowledged envelope → executor applies → the thread tells every step", async () => {
    const { plan, message } = await proposed(s);
    const ack = await click(s, message, "U0ALICE", "approve");
    expect(ack).toEqual({ acked: true, response: undefined });
    await waitFor("approval", async () => (await statusOf(s, plan)) === "approved");
    expect(await decisionsOf(s, plan)).toEqual([{ user_id: "U0ALICE", verdict: "approve", via: "slack" }]);

    const executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: await loadVerifyingKeys((await testGrantKeys()).publicPem),
      environment: "test",
      targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
    });
    try {
      await waitFor("apply", async () => (await statusOf(s, plan)) === "applied", 30_000);
    } finally {
      await executor.stop();
    }
    const replies = await waitFor("the whole story in the thread", () => {
      const texts = repliesText(s, message);
      return texts.some((t) => /applied/i.test(t)) && texts;
    });
    expect(replies.findIndex((t) => /approv/i.test(t))).toBeLessThan(replies.findIndex((t) => /executing/i.test(t)));
    expect(replies.findIndex((t) => /executing/i.test(t))).toBeLessThan(replies.findIndex((t) => /applied/i.test(t)));
  });

  it("Reject opens the modal; an empty reason is answered in the ack with the field error, a reason rejects", async () => {
    const { plan, message } = await proposed(s);
    const triggerId = `trigger-${plan.id}`;
    await click(s, message, "U0BOB", "reject", triggerId);
    const opened = await waitFor("the reject modal", () => s.slack.views.find((v) => v.trigger_id === triggerId));
    const privateMetadata = opened.view.private_metadata as string;

    const empty = await s.slackDoor.viewSubmission({ user: "U0BOB", callbackId: "reject", privateMetadata, reason: "   " });
    expect(empty.acked).toBe(true);
    expect(empty.response).toMatchObject({ response_action: "errors", errors: { reason: expect.stringMatching(/say why/i) } });
    expect(await statusOf(s, plan)).toBe("pending");

    const submitted = await s.slackDoor.viewSubmission({ user: "U0BOB", callbackId: "reject", privateMetadata, reason: "Wrong customer" });
    expect(submitted).toEqual({ acked: true, response: undefined });
    await waitFor("rejection", async () => (await statusOf(s, plan)) === "rejected");
    await waitFor("the reason in the thread", () => repliesText(s, message).some((t) => /rejected/i.test(t) && t.includes("Wrong customer")));
  });

  it("18: someone who is not an approver is refused privately and nothing is recorded", async () => {
    const { plan, message } = await proposed(s);
    await click(s, message, "U0MALLORY", "approve");
    const told = await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0MALLORY").find((e) => /not an approver/i.test(e.text ?? "")));
    expect(told.channel).toBe(REVIEW);
    expect(await decisionsOf(s, plan)).toEqual([]);
    expect(await statusOf(s, plan)).toBe("pending");
  });

  it("8: 20 identical approve envelopes at once → exactly one approval; the rest are told", async () => {
    const { plan, message } = await proposed(s);
    const before = ephemeralsFor(s, "U0CAROL").length;
    const acks = await Promise.all(Array.from({ length: 20 }, () => click(s, message, "U0CAROL", "approve")));
    expect(acks.every((a) => a.acked)).toBe(true);
    const told = await waitFor("19 refusals", () => {
      const e = ephemeralsFor(s, "U0CAROL").slice(before);
      return e.length >= 19 && e;
    }, 60_000);
    expect(told.every((e) => /already/i.test(e.text ?? ""))).toBe(true);
    expect(await decisionsOf(s, plan)).toHaveLength(1);
    expect(await statusOf(s, plan)).toBe("approved");
    expect(await s.database.rows(sql`SELECT 1 FROM audit_events WHERE plan_id = ${plan.id} AND type = 'plan.approved'`)).toHaveLength(1);
  });

  it("/countersign list and login answer in the envelope's ack, privately", async () => {
    const { plan } = await proposed(s, { title: "Listed over the socket" });
    const list = await s.slackDoor.slashCommand({ user: "U0ALICE", text: "list" });
    expect(list.response).toMatchObject({ response_type: "ephemeral" });
    expect(list.response!.text).toContain(`/plans/${plan.id}|Listed over the socket>`);
    expect((await s.slackDoor.slashCommand({ user: "U0REQUESTER", text: "list" })).response!.text).not.toContain(plan.id);

    const login = await s.slackDoor.slashCommand({ user: "U0ALICE", text: "login" });
    expect(login.response).toMatchObject({ response_type: "ephemeral" });
    expect(login.response!.text).toMatch(/http:\/\/countersign\.test\/login\/[A-Za-z0-9_-]{20,}/);
  });

  it("a `disconnect` from Slack: the client opens a new connection, and a click sent meanwhile is recorded once", async () => {
    const { plan, message } = await proposed(s, { actions: [{ kind: "http.json", target: "vault", path: "/contacts/19", op: "merge", body: { d: 1 } }] });
    const ticketsBefore = s.socket.tickets.length;
    const oldConnection = s.socket.openConnections[0]!;
    expect(s.socket.disconnect("refresh_requested")).toBe(1);
    // Sent while no connection may take it: Slack holds it until the client is back.
    const during = click(s, message, "U0ALICE", "approve");
    await waitFor("the old connection closed", () => oldConnection.closedAt !== undefined, 30_000);
    await waitFor("a new greeted connection", () => s.socket.openConnections.length === 1 && s.socket.openConnections[0]!.id !== oldConnection.id, 60_000);
    expect(s.socket.tickets.length).toBeGreaterThan(ticketsBefore); // it called apps.connections.open again
    expect((await during).acked).toBe(true);
    const held = s.socket.deliveries.at(-1)!;
    expect(held.attempts.map((a) => a.connection)).not.toContain(oldConnection.id);
    expect(held.ack!.connection).not.toBe(oldConnection.id);
    await waitFor("the first approval", async () => (await decisionsOf(s, plan)).length === 1);

    const after = await click(s, message, "U0BOB", "approve");
    expect(after.acked).toBe(true);
    await waitFor("approved by the second click, after the reconnect", async () => (await statusOf(s, plan)) === "approved");
    expect((await decisionsOf(s, plan)).map((d) => d.user_id)).toEqual(["U0ALICE", "U0BOB"]);
    const newId = s.socket.openConnections[0]!.id;
    expect(s.socket.deliveries.at(-1)!.ack!.connection).toBe(newId);
  }, 120_000);

  it("an envelope whose ack was lost is redelivered with retry_attempt, and the click still counts once", async () => {
    const { plan, message } = await proposed(s);
    s.socket.loseNextAcks(1);
    const ack = await click(s, message, "U0BOB", "approve");
    expect(ack.acked).toBe(true);
    const delivery = s.socket.deliveries.at(-1)!;
    expect(delivery.lostAcks).toBe(1);
    expect(delivery.attempts.map((a) => a.retryAttempt)).toEqual([0, 1]);
    await waitFor("approved", async () => (await statusOf(s, plan)) === "approved");
    await waitFor("the redelivery told it changed nothing", () => ephemeralsFor(s, "U0BOB").some((e) => /already/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toHaveLength(1);
    expect(await s.database.rows(sql`SELECT 1 FROM audit_events WHERE plan_id = ${plan.id} AND type = 'plan.approved'`)).toHaveLength(1);
  });

  it("the client sent nothing Slack would not understand", () => {
    expect(s.socket.strayMessages).toEqual([]);
  });
});

describe("Socket Mode emulator", () => {
  const slack = new SlackEmulator();
  const socket = new SocketModeEmulator(slack);
  beforeAll(async () => {
    await slack.start();
    await socket.start();
  });
  afterAll(async () => {
    await socket.stop();
    await slack.stop();
  });

  const open = (token: string) => fetch(`${slack.url}apps.connections.open`, { method: "POST", headers: { authorization: `Bearer ${token}` } }).then((r) => r.json() as Promise<{ ok: boolean; error?: string; url?: string }>);

  it("apps.connections.open takes only the app-level token", async () => {
    expect(await open(slack.botToken)).toEqual({ ok: false, error: "not_allowed_token_type" });
    expect(await open("xapp-1-A0OTHER-1-wrong")).toEqual({ ok: false, error: "invalid_auth" });
    const granted = await open(socket.appToken);
    expect(granted.ok).toBe(true);
    expect(granted.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=[0-9a-f]{32}&app_id=A0COUNTERSIGN$/);
  });

  it("a ticket opens one connection, greeted with hello; a reused or made-up ticket is refused", async () => {
    const { url } = await open(socket.appToken);
    const first = new WebSocket(url!);
    const hello = await new Promise<Record<string, unknown>>((resolve, reject) => {
      first.once("message", (data) => resolve(JSON.parse(String(data)) as Record<string, unknown>));
      first.once("error", reject);
    });
    expect(hello).toMatchObject({ type: "hello", num_connections: 1, connection_info: { app_id: "A0COUNTERSIGN" } });
    for (const refused of [url!, url!.replace(/ticket=[0-9a-f]+/, "ticket=madeup")]) {
      const again = new WebSocket(refused);
      again.on("error", () => {}); // the refusal itself, awaited below as the upgrade's answer
      const status = await new Promise<number | undefined>((resolve) => {
        again.once("unexpected-response", (_req, res) => resolve(res.statusCode));
        again.once("open", () => resolve(undefined));
      });
      expect(status).toBe(401);
      again.terminate();
    }
    first.close();
  });
});

describe("Socket Mode start-up", () => {
  it("a token Slack refuses stops the start with the variable to fix, not a stack", async () => {
    const slack = new SlackEmulator();
    await slack.start();
    const socket = new SocketModeEmulator(slack);
    await socket.start();
    const database = await pglite.open();
    const h = await openHarness(database);
    try {
      const good = { enabled: true as const, botToken: slack.botToken, signingSecret: undefined, appToken: socket.appToken, apiUrl: slack.url, reviewChannel: REVIEW };
      const open = (slackConfig: typeof good) => openSlackDoor(h.ctx, slackConfig, h.ctx.config, silentLogger);
      await expect(open({ ...good, appToken: "xapp-1-A0COUNTERSIGN-1-revoked" })).rejects.toMatchObject({
        name: "StartupError",
        key: "SLACK_APP_TOKEN",
        message: expect.stringMatching(/^SLACK_APP_TOKEN: Slack refused the app-level token \(invalid_auth\); .*connections:write/),
      });
      await expect(open({ ...good, botToken: "xoxb-revoked" })).rejects.toMatchObject({ name: "StartupError", key: "SLACK_BOT_TOKEN", message: expect.stringContaining("(invalid_auth)") });
      await slack.down();
      await expect(open(good)).rejects.toMatchObject({ name: "StartupError", key: "SLACK_API_URL", message: expect.stringContaining(`cannot reach Slack's Web API at ${slack.url}`) });
      await slack.up();
      const door = await open(good);
      expect(door.mode).toBe("socket");
      expect(socket.openConnections).toHaveLength(1);
      await door.stop();
      await waitFor("the connection closed by stop()", () => socket.connections.every((c) => c.closedAt !== undefined));
    } finally {
      await h.close();
      await database.close();
      await socket.stop();
      await slack.stop();
    }
  }, 60_000);
});
