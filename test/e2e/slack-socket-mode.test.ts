import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { openSlackDoor } from "../../src/slack/slack-door.ts";
import { pglite } from "../support/databases.ts";
import { openHarness, silentLogger } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { SocketModeEmulator } from "../support/socket-mode-emulator.ts";
import { waitFor } from "../support/wait-for.ts";

const REVIEW = "C0REVIEW";

// The Slack scenarios of slack.test.ts over Socket Mode are test/slow/slack-socket-mode.test.ts (npm run test:slow).

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

  const open = (token: string) =>
    fetch(`${slack.url}apps.connections.open`, { method: "POST", headers: { authorization: `Bearer ${token}` } }).then(
      (r) => r.json() as Promise<{ ok: boolean; error?: string; url?: string }>,
    );

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

describe("Socket Mode emulator: envelopes", () => {
  const slack = new SlackEmulator();
  const socket = new SocketModeEmulator(slack, { ackTimeoutMs: 1000, maxRetries: 2 });
  let client: WebSocket;
  const received: Record<string, unknown>[] = [];
  beforeAll(async () => {
    await slack.start();
    await socket.start();
    const { url } = (await (
      await fetch(`${slack.url}apps.connections.open`, { method: "POST", headers: { authorization: `Bearer ${socket.appToken}` } })
    ).json()) as { url: string };
    client = new WebSocket(url);
    client.on("message", (data) => received.push(JSON.parse(String(data)) as Record<string, unknown>));
    await waitFor("hello", () => received.some((m) => m.type === "hello"));
  });
  afterAll(async () => {
    client.terminate();
    await socket.stop();
    await slack.stop();
  });
  const envelopesOf = (id: string) => received.filter((m) => m.envelope_id === id);

  it("an unacknowledged envelope comes again with retry_attempt and retry_reason; the ack's payload is kept", async () => {
    const delivered = socket.deliver("slash_commands", { command: "/countersign", text: "list" }, { acceptsResponsePayload: true });
    const first = await waitFor("the envelope", () => received.find((m) => m.type === "slash_commands"));
    expect(first).toMatchObject({ type: "slash_commands", payload: { command: "/countersign", text: "list" }, accepts_response_payload: true });
    expect(first.retry_attempt).toBeUndefined();
    const id = first.envelope_id as string;
    const again = await waitFor("the redelivery", () => envelopesOf(id)[1]);
    expect(again).toMatchObject({ envelope_id: id, retry_attempt: 1, retry_reason: "timeout" });
    client.send(JSON.stringify({ envelope_id: id, payload: { response_type: "ephemeral", text: "ok" } }));
    const delivery = await delivered;
    expect(delivery.ack?.payload).toEqual({ response_type: "ephemeral", text: "ok" });
    expect(delivery.attempts.slice(0, 2).map((a) => a.retryAttempt)).toEqual([0, 1]);
  });

  it("gives up after maxRetries redeliveries, naming the envelope", async () => {
    const delivered = socket.deliver("events_api", { type: "event_callback", event: { type: "app_mention" } });
    await expect(delivered).rejects.toThrow(/envelope [0-9a-f-]+ \(events_api\) was not acknowledged after 3 attempts/);
    const id = socket.deliveries.at(-1)!.envelopeId;
    expect(envelopesOf(id).map((m) => m.retry_attempt)).toEqual([0, 1, 2]);
  });

  it("an ack for no envelope it sent is recorded as stray", async () => {
    client.send(JSON.stringify({ envelope_id: "not-one-of-ours" }));
    await waitFor("the stray ack", () => socket.strayMessages.some((m) => m.includes("not-one-of-ours")));
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
      const good = {
        enabled: true as const,
        botToken: slack.botToken,
        signingSecret: undefined,
        appToken: socket.appToken,
        apiUrl: slack.url,
        reviewChannel: REVIEW,
      };
      const open = (slackConfig: typeof good) => openSlackDoor(h.ctx, slackConfig, h.ctx.config, silentLogger);
      await expect(open({ ...good, appToken: "xapp-1-A0COUNTERSIGN-1-revoked" })).rejects.toMatchObject({
        name: "StartupError",
        key: "SLACK_APP_TOKEN",
        message: expect.stringMatching(/^SLACK_APP_TOKEN: Slack refused the app-level token \(invalid_auth\); .*connections:write/),
      });
      await expect(open({ ...good, botToken: "xoxb-revoked" })).rejects.toMatchObject({
        name: "StartupError",
        key: "SLACK_BOT_TOKEN",
        message: expect.stringContaining("(invalid_auth)"),
      });
      await slack.down();
      await expect(open(good)).rejects.toMatchObject({
        name: "StartupError",
        key: "SLACK_API_URL",
        message: expect.stringContaining(`cannot reach Slack's Web API at ${slack.url}`),
      });
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
