import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { runExecutor } from "../../src/executor/run-executor.ts";
import { executorServer } from "../../src/executor/server-client.ts";
import { runServer, type RunningServer } from "../../src/server/run-server.ts";
import { addAgent } from "../../src/service/agents/add-agent.ts";
import type { AgentIdentity } from "../../src/service/agents/authenticate-agent.ts";
import { expireDue } from "../../src/service/watch/expire-due.ts";
import { remindDue } from "../../src/service/watch/remind-due.ts";
import type { PlanView } from "../../src/service/lifecycle/plan-view.ts";
import { submitPlan } from "../../src/service/intake/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import type { TestDatabaseKind } from "../support/databases.ts";
import { READ_TOKEN, silentLogger, targetConfig, testConfig, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator, type SlackMessage } from "../support/slack-emulator.ts";
import { httpInteractions, SlackPayloads, SlackRequests, type SlackInteractions } from "../support/slack-requests.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { holdPlanRows, lockWaiters } from "../support/hold-plan-rows.ts";
import { waitFor } from "../support/wait-for.ts";

const SIGNING_SECRET = "slack-signing-secret-for-tests";
const EXECUTOR_TOKEN = "executor-token-0123456789abcdef";
const REVIEW = "C0REVIEW";

/** The two ways Slack reaches Countersign: signed HTTP requests, and Socket Mode (SLACK_APP_TOKEN) envelopes. */
export type Door = "http" | "socket";

/**
 * Countersign's Slack door over real HTTP or Socket Mode: the emulator plays Slack's Web API, and
 * Slack's side of the door is SlackRequests (signed POSTs) or the Socket Mode emulator (envelopes
 * on a WebSocket, acknowledged by id). `door` delivers interactions through whichever it is.
 */
function slackSuite(kind: TestDatabaseKind, doorKind: Door = "http") {
  const s = {} as {
    database: Database;
    target: JsonResourceServer;
    slack: SlackEmulator;
    /** Socket Mode only. */
    socket: SocketModeEmulator;
    server: RunningServer;
    /** Signed HTTP requests (HTTP door only): signatures, replays. */
    clicks: SlackRequests;
    door: SlackInteractions;
    agent: AgentIdentity;
    clockOffsetMs: number;
  };
  beforeAll(async () => {
    s.clockOffsetMs = 0;
    s.database = await kind.open();
    s.target = new JsonResourceServer({
      seed: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`/contacts/${i}`, { id: i, email: `c${i}@old.example` }])),
      readTokens: [READ_TOKEN],
      writeToken: WRITE_TOKEN,
    });
    await s.target.start();
    s.slack = new SlackEmulator({ teamId: "T0TEST" });
    await s.slack.start();
    if (doorKind === "socket") {
      s.socket = new SocketModeEmulator(s.slack);
      await s.socket.start();
    }
    const credentials =
      doorKind === "http" ? { signingSecret: SIGNING_SECRET, appToken: undefined } : { signingSecret: undefined, appToken: s.socket.appToken };
    const config = {
      ...testConfig({
        crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }),
        vault: targetConfig(s.target.url, { policy: { requiredApprovals: 2 } }),
        grouped: targetConfig(s.target.url, { policy: { approvers: ["S0REVIEWERS"], requiredApprovals: 2 } }),
        flaky: targetConfig(s.target.url, { policy: { approvers: ["S0FLAKY"], requiredApprovals: 1 } }),
        reminded: targetConfig(s.target.url, { policy: { approvers: ["U0ALICE", "U0BOB", "S0REVIEWERS"], requiredApprovals: 2, reminders: [600, 60] } }),
        risky: targetConfig(s.target.url, { policy: { risk: "high", reminders: [600] } }),
      }),
      executorToken: EXECUTOR_TOKEN,
      slack: {
        enabled: true as const,
        botToken: s.slack.botToken,
        ...credentials,
        apiUrl: s.slack.url,
        reviewChannel: REVIEW,
        escalationChannel: "C0ESCALATE",
      },
    };
    const serverConfig = {
      ...config,
      targets: {
        crm: targetConfig(s.target.url),
        vault: config.targets.vault!,
        grouped: config.targets.grouped!,
        flaky: config.targets.flaky!,
        reminded: config.targets.reminded!,
        risky: config.targets.risky!,
      },
    };
    s.slack.setUsergroup("S0REVIEWERS", ["U0GROUPIE", "U0GROUPIE2"]);
    s.slack.setUsergroup("S0FLAKY", ["U0GROUPIE"]);
    // The sweeper never runs by itself here: expiry is provoked by hand, so "before the sweeper ran" is real.
    s.server = await runServer({
      config: serverConfig,
      logger: silentLogger,
      database: s.database,
      grantKey: (await testGrantKeys()).signing,
      sweepMs: 3_600_000,
      remindMs: 3_600_000,
      deliverMs: 50,
      clock: () => new Date(Date.now() + s.clockOffsetMs),
    });
    s.clicks = new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
    s.door = doorKind === "http" ? httpInteractions(s.clicks) : s.socket.interactions(new SlackPayloads({ teamId: "T0TEST" }));
    s.agent = await addAgent(s.server.ctx, { name: "slack-agent" });
  });
  afterEach(() => {
    s.slack.clearFaults();
    s.slack.delay(0);
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

let contact = 0;
/** Submits a plan over one contact and waits until its preview is in the review channel. */
async function proposed(s: ReturnType<typeof slackSuite>, overrides: Record<string, unknown> = {}): Promise<{ plan: PlanView; message: SlackMessage }> {
  const n = contact++ % 50; // 50-59 are left to the tests that name a contact
  const { plan } = await submitPlan(s.server.ctx, {
    agent: s.agent,
    request: {
      title: `Update contact ${n}`,
      onBehalfOf: "U0REQUESTER",
      actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: `c${n}@new.example` } }],
      ...overrides,
    },
  });
  const message = await previewOf(s, plan);
  return { plan, message };
}

async function previewOf(s: ReturnType<typeof slackSuite>, plan: PlanView): Promise<SlackMessage> {
  const ts = await waitFor(`the preview of ${plan.id}`, async () => {
    const [row] = await s.database.rows<{ ts: string }>(sql`SELECT ts FROM slack_messages WHERE plan_id = ${plan.id}`);
    return row?.ts;
  });
  return s.slack.message(REVIEW, ts)!;
}

function buttons(message: SlackMessage): { action_id: string; value?: string; style?: string; url?: string }[] {
  return (message.blocks ?? []).flatMap((b) => ((b as { type: string }).type === "actions" ? ((b as { elements: unknown[] }).elements as never[]) : []));
}

const click = (s: ReturnType<typeof slackSuite>, message: SlackMessage, user: string, actionId: "approve" | "reject", options: { teamId?: string } = {}) => {
  const button = buttons(message).find((b) => b.action_id === actionId)!;
  return s.door.blockAction({ user, actionId, value: button.value!, channelId: REVIEW, messageTs: message.ts, ...options });
};

const statusOf = async (s: ReturnType<typeof slackSuite>, plan: PlanView) =>
  (await s.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]!.status;
const decisionsOf = async (s: ReturnType<typeof slackSuite>, plan: PlanView) =>
  s.database.rows<{ user_id: string; verdict: string; via: string }>(sql`SELECT user_id, verdict, via FROM decisions WHERE plan_id = ${plan.id} ORDER BY id`);
const ephemeralsFor = (s: ReturnType<typeof slackSuite>, user: string) => s.slack.ephemerals.filter((e) => e.user === user);
const repliesText = (s: ReturnType<typeof slackSuite>, message: SlackMessage) => s.slack.thread(REVIEW, message.ts).map((r) => r.text ?? "");

/** Registers a test only where it applies (a door it is about), so nothing shows as skipped. */
const itWhen = (applies: boolean): typeof it => (applies ? it : ((() => undefined) as unknown as typeof it));

/** The Slack scenarios, on one database, through one door: call inside a describe. */
export function slackDoorScenarios(kind: TestDatabaseKind, door: Door): void {
  const s = slackSuite(kind, door);
  /** Tests of what Countersign posts, not of how clicks arrive, run through one door only. */
  const oneDoor = door === "http";

  it("submit → preview with Approve/Reject bound to the hash → click → executor applies → the thread tells every step", async () => {
    const { plan, message } = await proposed(s);
    const [approve, reject] = [buttons(message).find((b) => b.action_id === "approve")!, buttons(message).find((b) => b.action_id === "reject")!];
    expect(approve).toMatchObject({ style: "primary", value: JSON.stringify({ planId: plan.id, hash: plan.hash }) });
    expect(reject).toMatchObject({ style: "danger", value: JSON.stringify({ planId: plan.id, hash: plan.hash }) });
    expect(JSON.stringify(message.blocks)).toContain(plan.id);

    const ack = await click(s, message, "U0ALICE", "approve");
    expect(ack).toEqual({ acked: true, response: undefined });
    await waitFor("approval", async () => (await statusOf(s, plan)) === "approved");
    expect(await decisionsOf(s, plan)).toEqual([{ user_id: "U0ALICE", verdict: "approve", via: "slack" }]);

    const { publicPem } = await testGrantKeys();
    const { loadVerifyingKeys } = await import("../../src/grant/keys.ts");
    const executor = runExecutor({
      server: executorServer(s.server.url, EXECUTOR_TOKEN),
      keys: await loadVerifyingKeys(publicPem),
      environment: "test",
      targets: { crm: targetConfig(s.target.url, { write: { headers: { Authorization: `Bearer ${WRITE_TOKEN}` } } }) },
      logger: silentLogger,
    });
    try {
      await waitFor("apply", async () => (await statusOf(s, plan)) === "applied");
    } finally {
      await executor.stop();
    }
    const replies = await waitFor("the whole story in the thread", () => {
      const texts = repliesText(s, message);
      return texts.some((t) => /applied/i.test(t)) && texts;
    });
    // In order, whether each transition was a reply of its own or several queued ones were one
    // reply listing them ("approved by … → executing → applied").
    const story = replies.join("\n");
    expect(story.search(/approv/i)).toBeGreaterThanOrEqual(0);
    expect(story.search(/approv/i)).toBeLessThan(story.search(/executing/i));
    expect(story.search(/executing/i)).toBeLessThan(story.search(/applied/i));
    const final = await waitFor("the preview to show applied without buttons", () => {
      const m = s.slack.message(REVIEW, message.ts)!;
      return buttons(m).every((b) => b.action_id !== "approve") && /applied/i.test(JSON.stringify(m.blocks)) && m;
    });
    expect(buttons(final).map((b) => b.action_id)).not.toContain("reject");
  });

  it("Reject opens a modal asking for a reason, and the submission rejects the plan (reason in the thread)", async () => {
    const { plan, message } = await proposed(s);
    const triggerId = `trigger-${plan.id}`;
    const button = buttons(message).find((b) => b.action_id === "reject")!;
    await s.door.blockAction({ user: "U0BOB", actionId: "reject", value: button.value!, channelId: REVIEW, messageTs: message.ts, triggerId });
    const opened = await waitFor("the reject modal", () => s.slack.views.find((v) => v.trigger_id === triggerId));
    expect(opened.view).toMatchObject({ callback_id: "reject", type: "modal" });
    expect(JSON.parse(opened.view.private_metadata as string)).toMatchObject({ planId: plan.id, hash: plan.hash });
    expect(JSON.stringify(opened.view.blocks)).toContain('"block_id":"reason"');

    const empty = await s.door.viewSubmission({ user: "U0BOB", callbackId: "reject", privateMetadata: opened.view.private_metadata as string, reason: "   " });
    expect(empty.response).toMatchObject({ response_action: "errors", errors: { reason: expect.stringMatching(/say why/i) } });
    expect(await statusOf(s, plan)).toBe("pending");
    const submitted = await s.door.viewSubmission({
      user: "U0BOB",
      callbackId: "reject",
      privateMetadata: opened.view.private_metadata as string,
      reason: "Wrong customer <!channel>",
    });
    expect(submitted).toEqual({ acked: true, response: undefined });
    await waitFor("rejection", async () => (await statusOf(s, plan)) === "rejected");
    const texts = await waitFor("the rejection in the thread", () => repliesText(s, message).find((t) => /rejected/i.test(t)));
    expect(texts).toContain("Wrong customer");
    expect(texts).not.toContain("<!channel>");
  });

  it("17: the person the agent acts for is refused, told why, and nothing is recorded", async () => {
    const { plan, message } = await proposed(s, { onBehalfOf: "U0ALICE" });
    await click(s, message, "U0ALICE", "approve");
    const told = await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0ALICE").find((e) => /on your behalf/i.test(e.text ?? "")));
    expect(told.channel).toBe(REVIEW);
    expect(await decisionsOf(s, plan)).toEqual([]);
    expect(await statusOf(s, plan)).toBe("pending");
  });

  it("18: an outsider is refused, and the message says who may approve", async () => {
    const { plan, message } = await proposed(s);
    await click(s, message, "U0MALLORY", "approve");
    const told = await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0MALLORY").find((e) => /not an approver/i.test(e.text ?? "")));
    for (const approver of ["U0ALICE", "U0BOB", "U0CAROL"]) expect(told.text).toContain(`<@${approver}>`);
    expect(await decisionsOf(s, plan)).toEqual([]);
  });

  it("19: a click after the plan expired, before any sweeper ran, is refused as expired", async () => {
    const { plan, message } = await proposed(s, { ttlSeconds: 10 });
    s.clockOffsetMs += 11_000;
    await click(s, message, "U0CAROL", "approve");
    await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0CAROL").find((e) => /expired/i.test(e.text ?? "")));
    expect(await statusOf(s, plan)).toBe("pending"); // the sweeper has not run; the click still could not approve
    expect(await decisionsOf(s, plan)).toEqual([]);
    expect(await expireDue(s.server.ctx)).toContain(plan.id);
    await waitFor("expired in the thread", () => repliesText(s, message).some((t) => /expired/i.test(t)));
  });

  it("20: quorum 2 — the same person approving twice counts once; a second person approves", async () => {
    const { plan, message } = await proposed(s, {
      actions: [{ kind: "http.json", target: "vault", path: "/contacts/59", op: "merge", body: { email: "v@new.example" } }],
    });
    await click(s, message, "U0ALICE", "approve");
    await waitFor("first approval", async () => (await decisionsOf(s, plan)).length === 1);
    await click(s, message, "U0ALICE", "approve");
    await waitFor("an ephemeral 'already approved'", () => ephemeralsFor(s, "U0ALICE").find((e) => /already approved/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toHaveLength(1);
    expect(await statusOf(s, plan)).toBe("pending");
    await waitFor("approval 1 of 2 in the thread", () => repliesText(s, message).some((t) => /1 of 2/.test(t)));
    await click(s, message, "U0BOB", "approve");
    await waitFor("approved", async () => (await statusOf(s, plan)) === "approved");
  });

  it("/countersign list shows what waits for this person: a plan they already approved drops out, the requester never sees their own", async () => {
    const { plan, message } = await proposed(s, {
      title: "Listed vault change",
      actions: [{ kind: "http.json", target: "vault", path: "/contacts/55", op: "merge", body: { email: "l@new.example" } }],
    });
    const listFor = async (user: string) => {
      const ack = await s.door.slashCommand({ user, text: "list" });
      expect(ack.acked).toBe(true);
      return ack.response as { response_type: string; text: string };
    };
    const before = await listFor("U0ALICE");
    expect(before.response_type).toBe("ephemeral");
    expect(before.text).toContain(`/plans/${plan.id}|Listed vault change>`);
    await click(s, message, "U0ALICE", "approve");
    await waitFor("Alice's approval", async () => (await decisionsOf(s, plan)).length === 1);
    expect(await statusOf(s, plan)).toBe("pending"); // quorum 2: still waiting, but no longer for Alice
    expect((await listFor("U0ALICE")).text).not.toContain(plan.id);
    expect((await listFor("U0BOB")).text).toContain(`/plans/${plan.id}|Listed vault change>`);
    expect((await listFor("U0REQUESTER")).text).not.toContain(plan.id);
    expect((await listFor("U0MALLORY")).text).toBe("Nothing is waiting for your decision.");
  });

  it("/countersign login answers privately with a one-time sign-in link", async () => {
    const ack = await s.door.slashCommand({ user: "U0ALICE", text: "login" });
    expect(ack.response).toMatchObject({ response_type: "ephemeral" });
    expect(ack.response!.text).toMatch(/http:\/\/countersign\.test\/login\/[A-Za-z0-9_-]{20,}/);
  });

  it("user group approvers: members count toward the quorum, outsiders are refused and told which group may", async () => {
    const { plan, message } = await proposed(s, { actions: [{ kind: "http.json", target: "grouped", path: "/contacts/57", op: "merge", body: { g: 1 } }] });
    await click(s, message, "U0ALICE", "approve"); // a direct approver elsewhere, but not of this plan
    const told = await waitFor("a refusal", () => ephemeralsFor(s, "U0ALICE").find((e) => /user group S0REVIEWERS/.test(e.text ?? "")));
    expect(told.text).not.toContain("<!subteam");
    await click(s, message, "U0GROUPIE", "approve");
    await waitFor("first approval", async () => (await decisionsOf(s, plan)).length === 1);
    expect(await statusOf(s, plan)).toBe("pending");
    await click(s, message, "U0GROUPIE2", "approve");
    await waitFor("approved by two members", async () => (await statusOf(s, plan)) === "approved");
    expect((await decisionsOf(s, plan)).map((d) => d.user_id)).toEqual(["U0GROUPIE", "U0GROUPIE2"]);
  });

  it("a Slack outage while looking up a group refuses the decision instead of allowing it", async () => {
    const { plan, message } = await proposed(s, { actions: [{ kind: "http.json", target: "flaky", path: "/contacts/56", op: "merge", body: { f: 1 } }] });
    s.slack.failNext("usergroups.users.list", { status: 500, count: 5 });
    await click(s, message, "U0GROUPIE", "approve");
    await waitFor("a refusal", () => ephemeralsFor(s, "U0GROUPIE").find((e) => /could not check your user group/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toEqual([]);
    s.slack.clearFaults();
    await click(s, message, "U0GROUPIE", "approve");
    await waitFor("approved once Slack answers", async () => (await statusOf(s, plan)) === "approved");
  });

  itWhen(oneDoor)("reminds in the thread at the configured points, mentioning who is still needed, and stops once decided", async () => {
    const { plan, message } = await proposed(s, {
      ttlSeconds: 900,
      actions: [{ kind: "http.json", target: "reminded", path: "/contacts/54", op: "merge", body: { r: 1 } }],
    });
    const reminders = () => repliesText(s, message).filter((t) => /Still waiting/.test(t));
    expect(await remindDue(s.server.ctx)).toBe(0); // 900 s left: nothing due
    await click(s, message, "U0ALICE", "approve");
    await waitFor("the first approval", async () => (await decisionsOf(s, plan)).length === 1);
    s.clockOffsetMs += 301_000; // 599 s left
    await remindDue(s.server.ctx);
    await remindDue(s.server.ctx); // a second sweep (or replica) sends nothing more
    const first = await waitFor("the first reminder", () => reminders().length === 1 && reminders()[0]!);
    expect(first).toContain("1 of 2");
    expect(first).toContain("<@U0BOB>");
    expect(first).toContain("<!subteam^S0REVIEWERS>");
    expect(first).not.toContain("<@U0ALICE>"); // already approved
    s.clockOffsetMs += 540_000; // 59 s left
    await remindDue(s.server.ctx);
    await waitFor("the second reminder", () => reminders().length === 2);
    await click(s, message, "U0BOB", "approve");
    await waitFor("approved", async () => (await statusOf(s, plan)) === "approved");
    expect(await remindDue(s.server.ctx)).toBe(0);
    s.clockOffsetMs -= 841_000;
  });

  itWhen(oneDoor)("escalates a high-risk plan nobody has approved when its reminder comes due", async () => {
    const { plan } = await proposed(s, {
      ttlSeconds: 900,
      actions: [{ kind: "http.json", target: "risky", path: "/contacts/53", op: "merge", body: { e: 1 } }],
    });
    expect(plan.plan.policy.risk).toEqual({ level: "high", rule: "targets.risky.policy.risk" });
    s.clockOffsetMs += 301_000;
    try {
      await remindDue(s.server.ctx);
      const escalation = await waitFor("the escalation", () => s.slack.messagesIn("C0ESCALATE").find((m) => (m.text ?? "").includes(plan.reviewUrl)));
      expect(escalation.text).toContain("high-risk");
    } finally {
      s.clockOffsetMs -= 301_000;
    }
  });

  it("3: a click carrying another hash is refused with a clear message and records nothing", async () => {
    const { plan, message } = await proposed(s);
    await s.door.blockAction({
      user: "U0BOB",
      actionId: "approve",
      value: JSON.stringify({ planId: plan.id, hash: "sha256:" + "ab".repeat(32) }),
      channelId: REVIEW,
      messageTs: message.ts,
    });
    await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0BOB").find((e) => /plan changed/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toEqual([]);
  });

  itWhen(door === "http")("12/13: stale or future timestamps, a changed byte and missing signatures get 401 and record nothing", async () => {
    const { plan, message } = await proposed(s);
    const value = buttons(message).find((b) => b.action_id === "approve")!.value!;
    const input = { user: "U0ALICE", actionId: "approve", value, channelId: REVIEW, messageTs: message.ts };
    const now = Math.floor(Date.now() / 1000);
    const refused = [
      await s.clicks.blockAction(input, { timestamp: now - 301 }),
      await s.clicks.blockAction(input, { timestamp: now + 330 }), // margin: the request takes time to arrive
      await s.clicks.blockAction(input, { changeBodyByte: true }),
      await s.clicks.blockAction(input, { omit: ["signature"] }),
      await s.clicks.blockAction(input, { omit: ["timestamp"] }),
      await s.clicks.blockAction(input, { signingSecret: "forged-secret" }),
    ];
    expect(refused.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401]);
    expect(await decisionsOf(s, plan)).toEqual([]);
  });

  itWhen(door === "http")("11: a captured signed click replayed later has no second effect", async () => {
    const { plan, message } = await proposed(s);
    await click(s, message, "U0CAROL", "approve");
    await waitFor("approval", async () => (await decisionsOf(s, plan)).length === 1);
    const replay = await s.clicks.replay();
    expect(replay.status).toBe(200);
    await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0CAROL").find((e) => /already approved/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toHaveLength(1);
  });

  it("refuses clicks from another workspace (Slack Connect)", async () => {
    const { plan, message } = await proposed(s);
    await click(s, message, "U0ALICE", "approve", { teamId: "T0OTHER" });
    await waitFor("an ephemeral refusal", () => ephemeralsFor(s, "U0ALICE").find((e) => /own workspace/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toEqual([]);
  });

  itWhen(oneDoor)("23: hostile plan text is shown literally: no mention fires, no disguised link", async () => {
    const hostile = "<!channel> <!here> <@U0ALICE> <!subteam^S123> <https://evil.example|prod> *bold* _x_ ~x~ `code`";
    const { message } = await proposed(s, { title: hostile, reason: hostile });
    const sent = JSON.stringify({ text: message.text, blocks: message.blocks });
    for (const token of ["<!channel>", "<!here>", "<!subteam^S123>", "<https://evil.example|prod>"]) expect(sent).not.toContain(token);
    const post = s.slack.callsTo("chat.postMessage").find((c) => c.body.ts === message.ts || JSON.stringify(c.body).includes("evil.example"))!;
    expect(post.body.link_names).toBeUndefined();
    expect(post.body.parse).toBeUndefined();
  });

  itWhen(oneDoor)("24: a plan larger than a message allows is posted within Block Kit limits, marked as truncated, and still binds the full hash", async () => {
    const fields = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field${i}`, "x".repeat(200)]));
    const actions = Array.from({ length: 20 }, (_, i) => ({
      kind: "http.json",
      target: "crm",
      path: `/contacts/${30 + i}`,
      op: "merge",
      body: i === 0 ? fields : { note: "y".repeat(5000) },
    }));
    const { plan, message } = await proposed(s, { title: "T".repeat(200), actions });
    expect(message.blocks!.length).toBeLessThanOrEqual(50);
    expect(JSON.stringify(message.blocks)).toMatch(/see full plan/i);
    expect(buttons(message).find((b) => b.action_id === "approve")!.value).toBe(JSON.stringify({ planId: plan.id, hash: plan.hash }));
  });

  itWhen(door === "socket")("Socket Mode: connected with the app-level token, and no /slack/events is served", async () => {
    const opens = s.slack.callsTo("apps.connections.open");
    expect(opens[0]!.headers.authorization).toBe(`Bearer ${s.socket.appToken}`);
    expect(opens[0]!.answer?.body).toMatchObject({ ok: true });
    expect(s.socket.openConnections).toHaveLength(1);
    const res = await fetch(`${s.server.url}/slack/events`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "payload=%7B%7D",
    });
    expect(res.status).toBe(404);
  });

  itWhen(door === "socket")(
    "Socket Mode: after Slack's `disconnect` the client reconnects; a click sent meanwhile and one after are each recorded once",
    async () => {
      const { plan, message } = await proposed(s, { actions: [{ kind: "http.json", target: "vault", path: "/contacts/52", op: "merge", body: { d: 1 } }] });
      const ticketsBefore = s.socket.tickets.length;
      const old = s.socket.openConnections[0]!;
      expect(s.socket.disconnect("refresh_requested")).toBeGreaterThanOrEqual(1);
      const during = click(s, message, "U0ALICE", "approve"); // no connection may take it: held until the client is back
      await waitFor("the old connection closed", () => old.closedAt !== undefined, 30_000);
      await waitFor("a new greeted connection", () => s.socket.openConnections.some((c) => c.id !== old.id), 60_000);
      expect(s.socket.tickets.length).toBeGreaterThan(ticketsBefore); // it called apps.connections.open again
      expect((await during).acked).toBe(true);
      expect(s.socket.deliveries.at(-1)!.attempts.map((a) => a.connection)).not.toContain(old.id);
      await waitFor("the first approval", async () => (await decisionsOf(s, plan)).length === 1);
      expect((await click(s, message, "U0BOB", "approve")).acked).toBe(true);
      await waitFor("approved by the click after the reconnect", async () => (await statusOf(s, plan)) === "approved");
      expect((await decisionsOf(s, plan)).map((d) => d.user_id)).toEqual(["U0ALICE", "U0BOB"]);
    },
    120_000,
  );

  itWhen(door === "socket")("Socket Mode: an envelope whose ack was lost is redelivered with retry_attempt, and the click still counts once", async () => {
    const { plan, message } = await proposed(s);
    s.socket.loseNextAcks(1);
    expect((await click(s, message, "U0BOB", "approve")).acked).toBe(true);
    const delivery = s.socket.deliveries.at(-1)!;
    expect(delivery.lostAcks).toBe(1);
    // A third attempt is possible only if the second ack took longer than Slack's 3 s (a loaded machine).
    expect(delivery.attempts.slice(0, 2).map((a) => a.retryAttempt)).toEqual([0, 1]);
    await waitFor("approved", async () => (await statusOf(s, plan)) === "approved");
    await waitFor("the redelivery told it changed nothing", () => ephemeralsFor(s, "U0BOB").some((e) => /already approved/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toHaveLength(1);
    expect(await s.database.rows(sql`SELECT 1 FROM audit_events WHERE plan_id = ${plan.id} AND type = 'plan.approved'`)).toHaveLength(1);
  });

  itWhen(door === "socket")(
    "Socket Mode: opening the Home tab (app_home_opened) publishes the person's waiting plans, and nothing of them to the requester",
    async () => {
      const { plan } = await proposed(s);
      const homeOf = (user: string) => JSON.stringify(s.slack.homeOf(user)?.blocks ?? []);
      const publishes = (user: string) => s.slack.published.filter((p) => p.user === user).length;
      // The plan's own Home publish comes through the outbox first; the tab opened after it is rebuilt on its own.
      await waitFor("Carol's Home to list the plan", () => homeOf("U0CAROL").includes(plan.id));
      const before = { carol: publishes("U0CAROL"), requester: publishes("U0REQUESTER") };
      const opened = await s.socket.event({ type: "app_home_opened", user: "U0CAROL", channel: "D0HOME", tab: "home" });
      expect(opened.ack).toBeDefined();
      await waitFor("Carol's Home rebuilt", () => publishes("U0CAROL") > before.carol);
      const approve = JSON.stringify({ planId: plan.id, hash: plan.hash });
      expect(homeOf("U0CAROL")).toContain(JSON.stringify(approve));
      await s.socket.event({ type: "app_home_opened", user: "U0REQUESTER", channel: "D0HOME", tab: "home" });
      await waitFor("the requester's Home", () => publishes("U0REQUESTER") > before.requester);
      expect(homeOf("U0REQUESTER")).not.toContain(plan.id);
    },
  );

  itWhen(door === "socket")("Socket Mode: the client sent nothing Slack would not understand", () => {
    expect(s.socket.deliveries.length).toBeGreaterThan(0);
    expect(s.socket.strayMessages).toEqual([]);
  });
}

/** Delivery and concurrency scenarios that need PostgreSQL's row locks and real concurrency: call inside a describe. */
export function slackDeliveryScenarios(kind: TestDatabaseKind, door: Door): void {
  const s = slackSuite(kind, door);
  const oneDoor = door === "http";

  it("8: 20 identical approve clicks at once → exactly one approval; the rest are told", async () => {
    const { plan, message } = await proposed(s);
    const before = ephemeralsFor(s, "U0ALICE").length;
    const responses = await Promise.all(Array.from({ length: 20 }, () => click(s, message, "U0ALICE", "approve")));
    expect(responses.every((r) => r.acked)).toBe(true);
    const told = await waitFor("19 refusals", () => {
      const e = ephemeralsFor(s, "U0ALICE").slice(before);
      return e.length >= 19 && e;
    });
    expect(told.every((e) => /already/i.test(e.text ?? ""))).toBe(true);
    expect(await decisionsOf(s, plan)).toHaveLength(1);
    expect(await statusOf(s, plan)).toBe("approved");
    const approvedEvents = await s.database.rows(sql`SELECT 1 FROM audit_events WHERE plan_id = ${plan.id} AND type = 'plan.approved'`);
    expect(approvedEvents).toHaveLength(1);
  });

  it("9: approve and reject at the same moment → one terminal decision; the loser is told", async () => {
    const { plan, message } = await proposed(s);
    const meta = JSON.stringify({ planId: plan.id, hash: plan.hash, channel: REVIEW });
    const before = s.slack.ephemerals.length;
    await Promise.all([
      click(s, message, "U0BOB", "approve"),
      s.door.viewSubmission({ user: "U0CAROL", callbackId: "reject", privateMetadata: meta, reason: "no" }),
    ]);
    const status = await waitFor("a terminal status", async () => {
      const st = await statusOf(s, plan);
      return st !== "pending" && st;
    });
    expect(["approved", "rejected"]).toContain(status);
    await waitFor("the loser to be told", () => s.slack.ephemerals.slice(before).some((e) => /already/i.test(e.text ?? "")));
    expect((await decisionsOf(s, plan)).length).toBe(1);
  });

  itWhen(door === "http")("10: a handler slower than 3 s acknowledges first, and Slack's retry adds no second decision", async () => {
    const { plan, message } = await proposed(s);
    // Hold the plan row so the decision cannot finish; the click must still be answered.
    const hold = await holdPlanRows(s.database, [plan.id]);
    try {
      const first = await click(s, message, "U0ALICE", "approve");
      expect(first.acked).toBe(true); // answered while the decision is still blocked
      const retry = await s.clicks.replay(undefined);
      expect(retry.status).toBe(200);
      expect(await decisionsOf(s, plan)).toEqual([]);
    } finally {
      await hold.release();
    }
    await waitFor("the decision", async () => (await statusOf(s, plan)) === "approved");
    await waitFor("the retry's refusal", () => ephemeralsFor(s, "U0ALICE").some((e) => /already/i.test(e.text ?? "")));
    expect(await decisionsOf(s, plan)).toHaveLength(1);
  });

  it("a burst of clicks on plans whose rows another connection holds is acknowledged while held; each decision lands once, after the rows are free, and its result reaches the message", async () => {
    const proposals = await Promise.all(Array.from({ length: 5 }, () => proposed(s)));
    const hold = await holdPlanRows(
      s.database,
      proposals.map((p) => p.plan.id),
    );
    try {
      const acks = await Promise.all(proposals.map(({ message }, i) => click(s, message, ["U0ALICE", "U0BOB", "U0CAROL"][i % 3]!, "approve")));
      expect(acks.every((a) => a.acked)).toBe(true);
      await waitFor("a decision waiting for a held row", async () => (await lockWaiters(s.database)) > 0);
      for (const { plan } of proposals) expect(await decisionsOf(s, plan)).toEqual([]);
    } finally {
      await hold.release();
    }
    for (const { plan, message } of proposals) {
      await waitFor(`approval of ${plan.id}`, async () => (await statusOf(s, plan)) === "approved");
      expect(await decisionsOf(s, plan)).toHaveLength(1);
      await waitFor(`the preview of ${plan.id} to show the approval`, () =>
        buttons(s.slack.message(REVIEW, message.ts)!).every((b) => b.action_id !== "approve"),
      );
    }
  });

  itWhen(oneDoor)("14: Slack answers 429 with Retry-After → the bot waits at least that long and posts once", async () => {
    // The fault must meet this plan's post, not a reply still queued from an earlier test.
    await waitFor("an idle outbox", async () => (await s.database.rows(sql`SELECT 1 FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL`)).length === 0);
    s.slack.failNext("chat.postMessage", { status: 429, retryAfter: 2 });
    const { plan } = await submitPlan(s.server.ctx, {
      agent: s.agent,
      request: { title: "rate limited", actions: [{ kind: "http.json", target: "crm", path: "/contacts/58", op: "merge", body: { a: 1 } }] },
    });
    const message = await previewOf(s, plan);
    const posts = s.slack.callsTo("chat.postMessage").filter((c) => JSON.stringify(c.body).includes(plan.id) && !c.body.thread_ts);
    expect(posts.map((p) => p.answer?.status)).toEqual([429, 200]);
    expect(posts[1]!.at.getTime() - posts[0]!.at.getTime()).toBeGreaterThanOrEqual(2000);
    expect(s.slack.messagesIn(REVIEW).filter((m) => m.ts === message.ts)).toHaveLength(1);
  });

  itWhen(oneDoor)("15: chat.update fails after a decision → the decision stands and the update is retried from the outbox", async () => {
    const { plan, message } = await proposed(s);
    s.slack.failNext("chat.update", { status: 500, count: 2 });
    await click(s, message, "U0BOB", "approve");
    await waitFor("approved", async () => (await statusOf(s, plan)) === "approved");
    await waitFor(
      "the update to land",
      () => s.slack.message(REVIEW, message.ts)!.history.length > 0 && buttons(s.slack.message(REVIEW, message.ts)!).every((b) => b.action_id !== "approve"),
      20_000,
    );
    expect(await decisionsOf(s, plan)).toHaveLength(1);
  });

  itWhen(oneDoor)(
    "16: Slack unreachable for a while → every post and reply is kept and delivered in order when it returns",
    async () => {
      await s.slack.down();
      const plans: PlanView[] = [];
      try {
        for (let i = 0; i < 3; i++) {
          plans.push(
            (
              await submitPlan(s.server.ctx, {
                agent: s.agent,
                request: {
                  title: `while down ${i}`,
                  actions: [{ kind: "http.json", target: "crm", path: `/contacts/${55 + i}`, op: "merge", body: { b: i } }],
                },
              })
            ).plan,
          );
        }
        const { decide } = await import("../../src/service/decide/decide.ts");
        await decide(s.server.ctx, { planId: plans[0]!.id, hash: plans[0]!.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
        await new Promise((r) => setTimeout(r, 2500));
      } finally {
        await s.slack.up();
      }
      const previews = await Promise.all(plans.map((p) => previewOf(s, p)));
      expect(previews).toHaveLength(3);
      const replies = await waitFor(
        "the approval under the first preview",
        () => {
          const texts = s.slack.thread(REVIEW, previews[0]!.ts).map((r) => r.text ?? "");
          return texts.some((t) => /approved/i.test(t)) && texts;
        },
        30_000,
      );
      expect(replies.findIndex((t) => /1 of 1|approval/i.test(t))).toBeLessThanOrEqual(replies.findIndex((t) => /approved/i.test(t)));
    },
    60_000,
  );
}
