import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { App, verifySlackRequest, type Logger, type types } from "@slack/bolt";
import {
  ErrorCode,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient,
  WebClientEvent,
  type WebClientOptions,
} from "@slack/web-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SLACK_CHANNEL_RATE_LIMIT, SlackEmulator, takePost, type JsonValue } from "../support/slack-emulator.ts";
import { FORM_CONTENT_TYPE, signSlackRequest, SlackRequests } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";

const TOKEN = "xoxb-emulator-test";
const SECRET = "test-signing-secret-0123456789abcdef";
const CHANNEL = "C0REVIEW";

/** Slack's logger interface, silent: the WebClient logs `[ERROR]` response messages and retries at error/warn level. */
const silent: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => "error" as ReturnType<Logger["getLevel"]>,
  setName: () => {},
};

/** The error a promise rejects with; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

async function platformError(promise: Promise<unknown>): Promise<WebAPIPlatformError> {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(WebAPIPlatformError);
  return err as WebAPIPlatformError;
}

describe("signSlackRequest", () => {
  // From Slack's "Verifying requests from Slack" page.
  const official = {
    secret: "8f742231b10e8888abcd99yyyzzz85a5",
    timestamp: 1531420618,
    body: "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
    signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
  };

  it("reproduces Slack's official example exactly, from a string or from bytes", () => {
    expect(signSlackRequest(official.secret, official.timestamp, official.body)).toBe(official.signature);
    expect(signSlackRequest(official.secret, String(official.timestamp), Buffer.from(official.body))).toBe(official.signature);
  });

  it("is accepted by Bolt's own verifier inside the 5-minute window, and refused for a changed byte or a stale timestamp", () => {
    const verify = (body: string, nowSeconds: number) =>
      verifySlackRequest({
        signingSecret: official.secret,
        body,
        headers: { "x-slack-signature": signSlackRequest(official.secret, official.timestamp, official.body), "x-slack-request-timestamp": official.timestamp },
        nowMilliseconds: nowSeconds * 1000,
      });
    expect(() => verify(official.body, official.timestamp + 60)).not.toThrow();
    expect(() => verify(official.body.replace("roadrunner", "roadrunnes"), official.timestamp + 60)).toThrow(/signature mismatch/);
    expect(() => verify(official.body, official.timestamp + 6 * 60)).toThrow(/stale/);
  });

  it("is accepted by Bolt even with a timestamp an hour in the future (Countersign must refuse that itself)", () => {
    expect(() =>
      verifySlackRequest({
        signingSecret: official.secret,
        body: official.body,
        headers: { "x-slack-signature": official.signature, "x-slack-request-timestamp": official.timestamp },
        nowMilliseconds: (official.timestamp - 3600) * 1000,
      }),
    ).not.toThrow();
  });
});

describe("SlackEmulator with the real WebClient", () => {
  const emulator = new SlackEmulator({
    botToken: TOKEN,
    usergroups: { S0APPROVERS: ["U0ALICE", "U0BOB"] },
    users: { U0ALICE: { name: "alice", real_name: "Alice Example", tz: "America/Sao_Paulo", tz_offset: -10_800 } },
  });
  const client = (options: WebClientOptions = {}, token = TOKEN) =>
    new WebClient(token, { slackApiUrl: emulator.url, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, logger: silent, ...options });
  let slack: WebClient;

  beforeAll(async () => {
    await emulator.start();
    slack = client();
  });
  afterEach(() => emulator.reset());
  afterAll(() => emulator.stop());

  it("answers auth.test with the configured team and bot", async () => {
    const result = await slack.auth.test();
    expect(result).toMatchObject({ ok: true, team_id: "T0TEST", user_id: "U0BOT", bot_id: "B0BOT" });
    expect(result.url).toMatch(/^https:\/\/.+\.slack\.com\/$/);
  });

  it("records a post, a thread reply and an update, with parsed blocks and the request headers", async () => {
    const blocks = [{ type: "section", text: { type: "plain_text", text: "Update Ana's email" } }];
    const posted = await slack.chat.postMessage({ channel: CHANNEL, text: "Plan: Update Ana's email", blocks });
    expect(posted.ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(posted.channel).toBe(CHANNEL);
    const reply = await slack.chat.postMessage({ channel: CHANNEL, thread_ts: posted.ts!, text: "Approval 1 of 2 by <@U0ALICE>" });
    const replyToReply = await slack.chat.postMessage({ channel: CHANNEL, thread_ts: reply.ts!, text: "Approved" });
    const updated = await slack.chat.update({
      channel: CHANNEL,
      ts: posted.ts!,
      text: "Plan approved",
      blocks: [{ type: "section", text: { type: "mrkdwn", text: "*Approved*" } }],
    });

    expect(Number(reply.ts)).toBeGreaterThan(Number(posted.ts));
    expect(Number(replyToReply.ts)).toBeGreaterThan(Number(reply.ts));
    expect(updated).toMatchObject({ ok: true, channel: CHANNEL, ts: posted.ts, text: "Plan approved" });

    expect(emulator.messages).toHaveLength(1);
    const message = emulator.messages[0]!;
    expect(message).toMatchObject({
      channel: CHANNEL,
      ts: posted.ts,
      text: "Plan approved",
      blocks: [{ type: "section", text: { type: "mrkdwn", text: "*Approved*" } }],
    });
    expect(message.edited).toBeDefined();
    expect(message.history).toEqual([{ text: "Plan: Update Ana's email", blocks }]);
    // A reply to a reply lands in the same thread, as in Slack.
    expect(emulator.thread(CHANNEL, posted.ts!).map((m) => [m.text, m.thread_ts])).toEqual([
      ["Approval 1 of 2 by <@U0ALICE>", posted.ts],
      ["Approved", posted.ts],
    ]);

    const [first] = emulator.callsTo("chat.postMessage");
    expect(first!.body).toMatchObject({ channel: CHANNEL, text: "Plan: Update Ana's email", blocks });
    expect(first!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(first!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(typeof first!.raw).toBe("string");
    expect(first!.answer).toMatchObject({ status: 200, body: { ok: true, ts: posted.ts } });
    expect(emulator.calls.map((c) => c.method)).toEqual(["chat.postMessage", "chat.postMessage", "chat.postMessage", "chat.update"]);
  });

  it("refuses unknown channels, unknown threads and updates of messages that do not exist", async () => {
    expect((await platformError(slack.chat.postMessage({ channel: "G0PRIVATE", text: "x" }))).data.error).toBe("channel_not_found");
    expect((await platformError(slack.chat.postMessage({ channel: CHANNEL, thread_ts: "1.000001", text: "x" }))).data.error).toBe("thread_not_found");
    expect((await platformError(slack.chat.update({ channel: CHANNEL, ts: "1733140000.999900", text: "x" }))).data.error).toBe("message_not_found");
    expect((await platformError(slack.chat.postMessage({ channel: CHANNEL, text: "" }))).data.error).toBe("no_text");
    expect(emulator.messages).toEqual([]);
  });

  it("knows only the configured channels when given a list", async () => {
    const strict = new SlackEmulator({ botToken: TOKEN, channels: ["C0ONLY"] });
    await strict.start();
    try {
      const c = new WebClient(TOKEN, { slackApiUrl: strict.url, retryConfig: { retries: 0 }, logger: silent });
      expect((await platformError(c.chat.postMessage({ channel: CHANNEL, text: "x" }))).data.error).toBe("channel_not_found");
      await c.chat.postMessage({ channel: "C0ONLY", text: "x" });
      expect(strict.messagesIn("C0ONLY")).toHaveLength(1);
    } finally {
      await strict.stop();
    }
  });

  it("answers invalid_auth for a wrong token and not_authed for none, and stores nothing", async () => {
    const wrong = await platformError(client({}, "xoxb-wrong").chat.postMessage({ channel: CHANNEL, text: "x" }));
    expect(wrong.code).toBe(ErrorCode.PlatformError);
    expect(wrong.data.error).toBe("invalid_auth");
    const anonymous = new WebClient(undefined, { slackApiUrl: emulator.url, retryConfig: { retries: 0 }, logger: silent });
    expect((await platformError(anonymous.auth.test())).data.error).toBe("not_authed");
    expect(emulator.messages).toEqual([]);
    expect(emulator.callsTo("chat.postMessage")[0]!.answer).toEqual({ status: 200, body: { ok: false, error: "invalid_auth" } });
  });

  it("accepts JSON bodies as well as form bodies", async () => {
    const response = await fetch(`${emulator.url}chat.postMessage`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ channel: CHANNEL, text: "fallback", blocks: [{ type: "divider" }] }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, channel: CHANNEL });
    expect(emulator.messages[0]!.blocks).toEqual([{ type: "divider" }]);
  });

  it("answers unknown methods with 404 unknown_method", async () => {
    const err = await rejection(slack.apiCall("chat.unfurlEverything", {}));
    expect(err).toBeInstanceOf(WebAPIHTTPError);
    expect((err as WebAPIHTTPError).statusCode).toBe(404);
  });

  describe("Block Kit limits", () => {
    const text = (n: number, type: "plain_text" | "mrkdwn" = "mrkdwn") => ({ type, text: "x".repeat(n) });
    const button = (overrides: Record<string, JsonValue> = {}) => ({
      type: "button",
      action_id: "approve",
      text: { type: "plain_text", text: "Approve" },
      value: "v",
      ...overrides,
    });
    const actions = (element: Record<string, JsonValue>) => ({ type: "actions", elements: [element] });
    // Deliberately invalid blocks: typed loosely, as the WebClient's types would refuse some of them.
    const asBlocks = (blocks: Record<string, JsonValue>[]) => blocks as unknown as types.Block[];
    const cases: [string, Record<string, JsonValue>[], string][] = [
      ["more than 50 blocks", Array.from({ length: 51 }, () => ({ type: "divider" })), "/blocks"],
      ["section text over 3000", [{ type: "section", text: text(3001) }], "/blocks/0/text/text"],
      ["more than 10 section fields", [{ type: "section", fields: Array.from({ length: 11 }, () => text(1)) }], "/blocks/0/fields"],
      ["a section field over 2000", [{ type: "section", fields: [text(1), text(2001)] }], "/blocks/0/fields/1/text"],
      ["header text over 150", [{ type: "header", text: text(151, "plain_text") }], "/blocks/0/text/text"],
      ["header text not plain_text", [{ type: "header", text: text(10, "mrkdwn") }], "/blocks/0/text/type"],
      ["button value over 2000", [actions(button({ value: "v".repeat(2001) }))], "/blocks/0/elements/0/value"],
      ["button text over 75", [actions(button({ text: text(76, "plain_text") }))], "/blocks/0/elements/0/text/text"],
      ["action_id over 255", [actions(button({ action_id: "a".repeat(256) }))], "/blocks/0/elements/0/action_id"],
      ["block_id over 255", [{ type: "divider", block_id: "b".repeat(256) }], "/blocks/0/block_id"],
      ["more than 10 context elements", [{ type: "context", elements: Array.from({ length: 11 }, () => text(1)) }], "/blocks/0/elements"],
      ["an unknown block type", [{ type: "carousel" }], "/blocks/0/type"],
      ["an empty section text", [{ type: "section", text: text(0) }], "/blocks/0/text/text"],
      [
        "a duplicate block_id",
        [
          { type: "divider", block_id: "same" },
          { type: "divider", block_id: "same" },
        ],
        "/blocks/1/block_id",
      ],
    ];

    it.each(cases)("refuses %s with invalid_blocks and a json-pointer, as Slack does", async (_name, blocks, pointer) => {
      const err = await platformError(slack.chat.postMessage({ channel: CHANNEL, text: "fallback", blocks: asBlocks(blocks) }));
      expect(err.data.error).toBe("invalid_blocks");
      const errors = (err.data as { errors?: string[] }).errors ?? [];
      expect(
        errors.some((e) => e.endsWith(`[json-pointer:${pointer}]`)),
        errors.join("\n"),
      ).toBe(true);
      expect(err.data.response_metadata?.messages?.every((m) => m.startsWith("[ERROR] "))).toBe(true);
      expect(emulator.messages).toEqual([]);
    });

    it("refuses invalid blocks in chat.update too, leaving the message as it was", async () => {
      const posted = await slack.chat.postMessage({ channel: CHANNEL, text: "original" });
      const err = await platformError(
        slack.chat.update({ channel: CHANNEL, ts: posted.ts!, text: "x", blocks: asBlocks([{ type: "header", text: text(151, "plain_text") }]) }),
      );
      expect(err.data.error).toBe("invalid_blocks");
      expect(emulator.message(CHANNEL, posted.ts!)).toMatchObject({ text: "original", history: [] });
    });

    it("accepts a message at every limit exactly", async () => {
      const blocks: Record<string, JsonValue>[] = [
        { type: "header", text: text(150, "plain_text"), block_id: "h".repeat(255) },
        { type: "section", text: text(3000) },
        { type: "section", fields: Array.from({ length: 10 }, () => text(2000)) },
        { type: "actions", elements: [button({ value: "v".repeat(2000), text: text(75, "plain_text"), action_id: "a".repeat(255), style: "primary" })] },
        { type: "context", elements: Array.from({ length: 10 }, () => text(1)) },
      ];
      while (blocks.length < 50) blocks.push({ type: "divider" });
      const posted = await slack.chat.postMessage({ channel: CHANNEL, text: "t".repeat(40_000), blocks: asBlocks(blocks) });
      expect(posted.ok).toBe(true);
      expect(emulator.messages[0]!.blocks).toHaveLength(50);
    });

    it("answers msg_too_long for message text over 40000 characters", async () => {
      const err = await platformError(slack.chat.postMessage({ channel: CHANNEL, text: "t".repeat(40_001) }));
      expect(err.data.error).toBe("msg_too_long");
    });

    it("answers invalid_blocks_format when blocks is not a JSON array", async () => {
      const err = await platformError(slack.apiCall("chat.postMessage", { channel: CHANNEL, text: "x", blocks: "[not json" }));
      expect(err.data.error).toBe("invalid_blocks_format");
    });
  });

  it("records ephemeral messages apart from the channel's messages", async () => {
    const result = await slack.chat.postEphemeral({ channel: CHANNEL, user: "U0ALICE", text: "You already approved this plan." });
    expect(result.message_ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(emulator.ephemerals).toMatchObject([{ channel: CHANNEL, user: "U0ALICE", text: "You already approved this plan." }]);
    expect(emulator.messages).toEqual([]);
  });

  it("opens a modal once per trigger id, and refuses expired triggers and invalid views", async () => {
    const view = {
      type: "modal" as const,
      callback_id: "reject",
      private_metadata: JSON.stringify({ planId: "p1", hash: "sha256:abc" }),
      title: { type: "plain_text" as const, text: "Reject plan" },
      submit: { type: "plain_text" as const, text: "Reject" },
      blocks: [
        {
          type: "input",
          block_id: "reason",
          label: { type: "plain_text" as const, text: "Reason" },
          element: { type: "plain_text_input" as const, action_id: "reason", multiline: true },
        },
      ],
    };
    const opened = await slack.views.open({ trigger_id: "trigger-1", view });
    expect(opened.view).toMatchObject({ callback_id: "reject", private_metadata: view.private_metadata, team_id: "T0TEST" });
    expect(emulator.views).toMatchObject([{ trigger_id: "trigger-1", view: { callback_id: "reject" } }]);

    expect((await platformError(slack.views.open({ trigger_id: "trigger-1", view }))).data.error).toBe("exchanged_trigger_id");
    emulator.expireTrigger("trigger-2");
    expect((await platformError(slack.views.open({ trigger_id: "trigger-2", view }))).data.error).toBe("expired_trigger_id");
    const tooLong = await platformError(
      slack.views.open({ trigger_id: "trigger-3", view: { ...view, title: { type: "plain_text", text: "A title longer than 24 chars" } } }),
    );
    expect(tooLong.data.error).toBe("invalid_arguments");
    expect(tooLong.data.response_metadata?.messages).toContain("[ERROR] must be less than 25 characters [json-pointer:/view/title/text]");
    expect(emulator.views).toHaveLength(1);
  });

  it("lists user group members and answers users.info", async () => {
    expect((await slack.usergroups.users.list({ usergroup: "S0APPROVERS" })).users).toEqual(["U0ALICE", "U0BOB"]);
    emulator.setUsergroup("S0APPROVERS", ["U0CAROL"]);
    expect((await slack.usergroups.users.list({ usergroup: "S0APPROVERS" })).users).toEqual(["U0CAROL"]);
    expect((await platformError(slack.usergroups.users.list({ usergroup: "S0NOPE" }))).data.error).toBe("no_such_subteam");

    expect((await slack.users.info({ user: "U0ALICE" })).user).toMatchObject({
      id: "U0ALICE",
      name: "alice",
      real_name: "Alice Example",
      tz_offset: -10_800,
      is_bot: false,
    });
    expect((await slack.users.info({ user: "U0BOB" })).user).toMatchObject({ id: "U0BOB", team_id: "T0TEST", deleted: false });
    expect((await platformError(slack.users.info({ user: "not-a-user" }))).data.error).toBe("user_not_found");
  });

  describe("faults", () => {
    it("429 with Retry-After surfaces as a rate-limited error carrying retryAfter, and nothing is posted", async () => {
      emulator.failNext("chat.postMessage", { retryAfter: 7 });
      const events: number[] = [];
      const c = client();
      c.on(WebClientEvent.RATE_LIMITED, (seconds: number) => events.push(seconds));
      const err = await rejection(c.chat.postMessage({ channel: CHANNEL, text: "x" }));
      expect(err).toBeInstanceOf(WebAPIRateLimitedError);
      expect((err as WebAPIRateLimitedError).code).toBe(ErrorCode.RateLimitedError);
      expect((err as WebAPIRateLimitedError).retryAfter).toBe(7);
      expect(events).toEqual([7]);
      expect(emulator.callsTo("chat.postMessage")[0]).toMatchObject({
        answer: { status: 429, body: { ok: false, error: "ratelimited" } },
        fault: { retryAfter: 7 },
      });
      expect(emulator.messages).toEqual([]);

      await c.chat.postMessage({ channel: CHANNEL, text: "x" });
      expect(emulator.messages).toHaveLength(1);
    });

    it("a WebClient left to retry honours Retry-After and then succeeds", async () => {
      emulator.failNext("chat.postMessage", { retryAfter: 1 });
      const c = client({ retryConfig: { retries: 1, minTimeout: 10, maxTimeout: 10 }, rejectRateLimitedCalls: false });
      const posted = await c.chat.postMessage({ channel: CHANNEL, text: "x" });
      expect(posted.ok).toBe(true);
      expect(emulator.callsTo("chat.postMessage").map((call) => call.answer?.status)).toEqual([429, 200]);
      expect(emulator.messages).toHaveLength(1);
    });

    it("500 surfaces as an HTTP error with the status code", async () => {
      emulator.failNext("chat.postMessage", { status: 500 });
      const err = await rejection(slack.chat.postMessage({ channel: CHANNEL, text: "x" }));
      expect(err).toBeInstanceOf(WebAPIHTTPError);
      expect((err as WebAPIHTTPError).code).toBe(ErrorCode.HTTPError);
      expect((err as WebAPIHTTPError).statusCode).toBe(500);
      expect(emulator.messages).toEqual([]);
    });

    it("a Slack error code answers as a platform error, for `count` calls, across methods with '*'", async () => {
      emulator.failNext("chat.update", { error: "cant_update_message", count: 2 });
      emulator.failNext("*", { error: "fatal_error" });
      const posted = await platformError(slack.chat.postMessage({ channel: CHANNEL, text: "x" }));
      expect(posted.data.error).toBe("fatal_error");
      const { ts } = await slack.chat.postMessage({ channel: CHANNEL, text: "x" });
      for (let i = 0; i < 2; i++)
        expect((await platformError(slack.chat.update({ channel: CHANNEL, ts: ts!, text: "y" }))).data.error).toBe("cant_update_message");
      await slack.chat.update({ channel: CHANNEL, ts: ts!, text: "y" });
      expect(emulator.message(CHANNEL, ts!)!.text).toBe("y");
    });

    it("afterApplying: the post takes effect but the answer is lost (the client sees a 500)", async () => {
      emulator.failNext("chat.postMessage", { status: 503, afterApplying: true });
      const err = await rejection(slack.chat.postMessage({ channel: CHANNEL, text: "posted, but nobody heard" }));
      expect((err as WebAPIHTTPError).statusCode).toBe(503);
      expect(emulator.messages.map((m) => m.text)).toEqual(["posted, but nobody heard"]);
    });

    it("dropConnection surfaces as a request (network) error", async () => {
      emulator.failNext("chat.postMessage", { dropConnection: true });
      const err = await rejection(slack.chat.postMessage({ channel: CHANNEL, text: "x" }));
      expect(err).toBeInstanceOf(WebAPIRequestError);
      expect((err as WebAPIRequestError).code).toBe(ErrorCode.RequestError);
      expect(emulator.messages).toEqual([]);
    });

    it("delay(): answers wait, so a client with a short timeout gives up; without the delay it succeeds", async () => {
      emulator.delay(3_000);
      const impatient = client({ timeout: 100 });
      const err = await rejection(impatient.auth.test());
      expect(err).toBeInstanceOf(WebAPIRequestError);
      emulator.delay(0);
      expect((await impatient.auth.test()).ok).toBe(true);
    });

    it("down()/up(): calls fail with a network error while down, in flight or new, and work again on the same URL after up()", async () => {
      const url = emulator.url;
      emulator.delay(5_000);
      const inFlight = rejection(slack.auth.test());
      await waitFor("the call to reach the emulator", () => emulator.callsTo("auth.test").length === 1);
      await emulator.down();
      emulator.delay(0);
      expect(await inFlight).toBeInstanceOf(WebAPIRequestError);

      const refused = await rejection(slack.chat.postMessage({ channel: CHANNEL, text: "x" }));
      expect(refused).toBeInstanceOf(WebAPIRequestError);
      const cause = ((refused as WebAPIRequestError).original as Error & { cause?: { code?: string } }).cause;
      expect(cause?.code).toBe("ECONNREFUSED");

      await emulator.up();
      expect(emulator.url).toBe(url);
      expect((await slack.chat.postMessage({ channel: CHANNEL, text: "x" })).ok).toBe(true);
      expect(emulator.messages).toHaveLength(1);
    });
  });
});

describe("Slack's per-channel rate limit in the emulator", () => {
  describe("the rule (takePost), at given times", () => {
    const limit = { perSecond: 1, burst: 3 };

    it("a quiet channel takes a burst, then one post per second; a refused post costs nothing", () => {
      let bucket = takePost(undefined, 0, limit).bucket;
      bucket = takePost(bucket, 0, limit).bucket;
      bucket = takePost(bucket, 0, limit).bucket;
      const refused = takePost(bucket, 0, limit);
      expect(refused.retryAfter).toBe(1);
      // Refused again and again at 0.5 s: still 1 s to wait in whole seconds, and the half token stays.
      const again = takePost(refused.bucket, 500, limit);
      expect(again.retryAfter).toBe(1);
      expect(again.bucket.tokens).toBeCloseTo(0.5);
      expect(takePost(again.bucket, 1000, limit).retryAfter).toBeUndefined();
    });

    it("refills to the burst and no further", () => {
      let bucket = takePost(undefined, 0, limit).bucket;
      bucket = takePost(bucket, 60_000, limit).bucket;
      expect(bucket.tokens).toBe(2);
    });

    it("Retry-After is whole seconds until one post fits, at least 1", () => {
      const slow = { perSecond: 0.25, burst: 1 };
      const { bucket } = takePost(undefined, 0, slow);
      expect(takePost(bucket, 0, slow).retryAfter).toBe(4);
      expect(takePost(bucket, 2_500, slow).retryAfter).toBe(2);
      expect(takePost(bucket, 3_990, slow).retryAfter).toBe(1);
      expect(takePost(bucket, 4_000, slow).retryAfter).toBeUndefined();
    });
  });

  describe("over HTTP with the real WebClient", () => {
    let clock = 0;
    const emulator = new SlackEmulator({ botToken: TOKEN, channelRateLimit: { perSecond: 1, burst: 2 }, now: () => clock });
    const client = (options: WebClientOptions = {}) =>
      new WebClient(TOKEN, { slackApiUrl: emulator.url, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, logger: silent, ...options });

    beforeAll(() => emulator.start());
    afterEach(() => {
      emulator.reset();
      clock += 60_000; // every test starts with quiet channels
    });
    afterAll(() => emulator.stop());

    it("a burst beyond the limit gets 429 ratelimited with Retry-After, nothing posted; after waiting it succeeds", async () => {
      const c = client();
      const answers = await Promise.all(
        [1, 2, 3, 4].map((i) =>
          c.chat.postMessage({ channel: CHANNEL, text: `post ${i}` }).then(
            () => "ok",
            (err: unknown) => err,
          ),
        ),
      );
      expect(answers.filter((a) => a === "ok")).toHaveLength(2);
      const refused = answers.filter((a) => a !== "ok");
      expect(refused).toHaveLength(2);
      for (const err of refused) {
        expect(err).toBeInstanceOf(WebAPIRateLimitedError);
        expect((err as WebAPIRateLimitedError).retryAfter).toBe(1);
      }
      const limited = emulator.callsTo("chat.postMessage").filter((call) => call.answer?.status === 429);
      expect(limited).toHaveLength(2);
      for (const call of limited) expect(call.answer?.body).toEqual({ ok: false, error: "ratelimited" });
      expect(emulator.messagesIn(CHANNEL)).toHaveLength(2);
      expect(emulator.rateLimited).toEqual({ refused: 2, early: 0 });

      clock += 1_000; // the Retry-After
      await c.chat.postMessage({ channel: CHANNEL, text: "after waiting" });
      expect(emulator.messagesIn(CHANNEL).map((m) => m.text)).toHaveLength(3);
      expect(emulator.rateLimited.early).toBe(0);
    });

    it("the Retry-After header itself says 1 and the body is Slack's", async () => {
      await client().chat.postMessage({ channel: CHANNEL, text: "a" });
      await client().chat.postMessage({ channel: CHANNEL, text: "b" });
      const res = await fetch(`${emulator.url}chat.postMessage`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ channel: CHANNEL, text: "c" }),
      });
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await res.json()).toEqual({ ok: false, error: "ratelimited" });
    });

    it("a flooded channel does not limit another channel", async () => {
      const c = client();
      await c.chat.postMessage({ channel: CHANNEL, text: "1" });
      await c.chat.postMessage({ channel: CHANNEL, text: "2" });
      expect(await rejection(c.chat.postMessage({ channel: CHANNEL, text: "3" }))).toBeInstanceOf(WebAPIRateLimitedError);
      for (const text of ["x", "y"]) await c.chat.postMessage({ channel: "C0OTHER", text });
      expect(emulator.messagesIn("C0OTHER")).toHaveLength(2);
      expect(emulator.rateLimited.refused).toBe(1);
    });

    it("thread replies count against their channel; chat.update does not", async () => {
      const c = client();
      const { ts } = await c.chat.postMessage({ channel: CHANNEL, text: "parent" });
      await c.chat.postMessage({ channel: CHANNEL, thread_ts: ts!, text: "reply" });
      expect(await rejection(c.chat.postMessage({ channel: CHANNEL, thread_ts: ts!, text: "reply 2" }))).toBeInstanceOf(WebAPIRateLimitedError);
      for (let i = 0; i < 5; i++) await c.chat.update({ channel: CHANNEL, ts: ts!, text: `edit ${i}` });
      expect(emulator.message(CHANNEL, ts!)!.history).toHaveLength(5);
    });

    it("counts posts that come before the Retry-After has passed (a client not honouring it)", async () => {
      const c = client();
      for (const text of ["1", "2"]) await c.chat.postMessage({ channel: CHANNEL, text });
      await rejection(c.chat.postMessage({ channel: CHANNEL, text: "3" }));
      clock += 400;
      const tooSoon = await rejection(c.chat.postMessage({ channel: CHANNEL, text: "too soon" }));
      expect((tooSoon as WebAPIRateLimitedError).retryAfter).toBe(1); // 0.6 s, in whole seconds
      expect(emulator.rateLimited).toEqual({ refused: 2, early: 1 });
      clock += 600; // a post fits again: on time, though the last answer said 1 s
      await c.chat.postMessage({ channel: CHANNEL, text: "on time" });
      expect(emulator.rateLimited).toEqual({ refused: 2, early: 1 });
    });

    it("limitChannels(false) lifts the limit; limitChannels() restores Slack's pace with full buckets", async () => {
      emulator.limitChannels(false);
      const c = client();
      for (let i = 0; i < 10; i++) await c.chat.postMessage({ channel: CHANNEL, text: String(i) });
      emulator.limitChannels();
      for (let i = 0; i < SLACK_CHANNEL_RATE_LIMIT.burst; i++) await c.chat.postMessage({ channel: CHANNEL, text: `burst ${i}` });
      expect(await rejection(c.chat.postMessage({ channel: CHANNEL, text: "over" }))).toBeInstanceOf(WebAPIRateLimitedError);
      expect(emulator.rateLimited.refused).toBe(1);
      emulator.limitChannels({ perSecond: 1, burst: 2 });
    });

    it("refuses a limit that means nothing, naming the setting", () => {
      expect(() => emulator.limitChannels({ perSecond: 0, burst: 2 })).toThrow(/perSecond must be a number above 0, got 0/);
      expect(() => emulator.limitChannels({ perSecond: 1, burst: 0.5 })).toThrow(/burst must be a whole number of at least 1, got 0.5/);
      expect(() => new SlackEmulator({ channelRateLimit: { perSecond: Number.NaN, burst: 1 } })).toThrow(/perSecond/);
    });

    it("limits views.publish per user when asked (limitHomes): a Home over it gets 429 with Retry-After, another person's does not, and it is off by default", async () => {
      const c = client();
      const home = (text: string) => ({ type: "home" as const, blocks: [{ type: "section", text: { type: "mrkdwn", text } }] });
      for (let i = 0; i < 5; i++) await c.views.publish({ user_id: "U0ALICE", view: home(`free ${i}`) });
      expect(emulator.homeRateLimited.refused).toBe(0);
      emulator.limitHomes({ perSecond: 0.5, burst: 1 });
      try {
        await c.views.publish({ user_id: "U0ALICE", view: home("first") });
        const refused = await rejection(c.views.publish({ user_id: "U0ALICE", view: home("too many") }));
        expect(refused).toBeInstanceOf(WebAPIRateLimitedError);
        expect((refused as WebAPIRateLimitedError).retryAfter).toBe(2);
        await c.views.publish({ user_id: "U0BOB", view: home("Bob's own bucket") });
        expect(emulator.homeOf("U0ALICE")?.blocks).toEqual(home("first").blocks);
        expect(emulator.homeRateLimited).toEqual({ refused: 1, early: 0 });
        expect(emulator.rateLimited.refused).toBe(0);
        clock += 2_000; // the Retry-After
        await c.views.publish({ user_id: "U0ALICE", view: home("after waiting") });
        expect(emulator.homeRateLimited.early).toBe(0);
        expect(() => emulator.limitHomes({ perSecond: -1, burst: 1 })).toThrow(/views.publish rate limit: perSecond must be a number above 0/);
      } finally {
        emulator.limitHomes(false);
      }
    });

    it("is off unless asked: a default emulator takes any number of posts at once", async () => {
      const free = new SlackEmulator({ botToken: TOKEN });
      await free.start();
      try {
        const c = new WebClient(TOKEN, { slackApiUrl: free.url, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, logger: silent });
        await Promise.all(Array.from({ length: 20 }, (_, i) => c.chat.postMessage({ channel: CHANNEL, text: String(i) })));
        expect(free.messagesIn(CHANNEL)).toHaveLength(20);
        expect(free.rateLimited.refused).toBe(0);
      } finally {
        await free.stop();
      }
    });
  });

  it("on the real clock, a WebClient left to retry honours Retry-After: every post lands, spaced by the limit", async () => {
    const emulator = new SlackEmulator({ botToken: TOKEN, channelRateLimit: { perSecond: 1, burst: 1 } });
    await emulator.start();
    try {
      const c = new WebClient(TOKEN, {
        slackApiUrl: emulator.url,
        retryConfig: { retries: 5, minTimeout: 10, maxTimeout: 10 },
        rejectRateLimitedCalls: false,
        logger: silent,
      });
      await Promise.all([1, 2, 3].map((i) => c.chat.postMessage({ channel: CHANNEL, text: `post ${i}` })));
      expect(emulator.messagesIn(CHANNEL)).toHaveLength(3);
      expect(emulator.rateLimited.early).toBe(0);
      // Arrival times of the accepted posts: one per second at most, however the machine is loaded.
      const accepted = emulator
        .callsTo("chat.postMessage")
        .filter((call) => call.answer?.status === 200)
        .map((call) => call.at.getTime())
        .sort((a, b) => a - b);
      for (let i = 1; i < accepted.length; i++) expect(accepted[i]! - accepted[i - 1]!).toBeGreaterThanOrEqual(900);
    } finally {
      await emulator.stop();
    }
  });
});

describe("SlackRequests", () => {
  describe("on the wire", () => {
    const received: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
    let server: Server;
    let requests: SlackRequests;

    beforeAll(async () => {
      server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          received.push({ headers: req.headers, body: Buffer.concat(chunks) });
          res.writeHead(200).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      requests = new SlackRequests({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, signingSecret: SECRET });
    });
    afterEach(() => void (received.length = 0));
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("sends exactly the form content type and a signature Bolt's verifier accepts over the received bytes", async () => {
      await requests.blockAction({ user: "U0ALICE", actionId: "approve", value: '{"planId":"p1","hash":"sha256:abc"}', messageTs: "1733140000.000100" });
      const [got] = received;
      expect(got!.headers["content-type"]).toBe(FORM_CONTENT_TYPE);
      expect(got!.headers["x-slack-signature"]).toMatch(/^v0=[0-9a-f]{64}$/);
      expect(() =>
        verifySlackRequest({
          signingSecret: SECRET,
          body: got!.body.toString(),
          headers: {
            "x-slack-signature": String(got!.headers["x-slack-signature"]),
            "x-slack-request-timestamp": Number(got!.headers["x-slack-request-timestamp"]),
          },
        }),
      ).not.toThrow();
      const payload = JSON.parse(new URLSearchParams(got!.body.toString()).get("payload")!) as Record<string, unknown>;
      expect(payload).toMatchObject({
        type: "block_actions",
        team: { id: "T0TEST" },
        user: { id: "U0ALICE", team_id: "T0TEST" },
        container: { message_ts: "1733140000.000100", channel_id: "C0REVIEW" },
        message: { ts: "1733140000.000100" },
        actions: [{ action_id: "approve", value: '{"planId":"p1","hash":"sha256:abc"}', type: "button" }],
      });
    });

    it("replay() sends the exact same bytes and headers again", async () => {
      await requests.slashCommand({ user: "U0ALICE", text: "list" });
      await requests.replay();
      expect(received).toHaveLength(2);
      expect(received[1]!.body.equals(received[0]!.body)).toBe(true);
      for (const h of ["content-type", "x-slack-signature", "x-slack-request-timestamp"]) expect(received[1]!.headers[h]).toBe(received[0]!.headers[h]);
    });

    it("changeBodyByte changes exactly one byte after signing; omit leaves headers out; timestamp is signed as given", async () => {
      await requests.slashCommand(
        { user: "U0ALICE", text: "help", triggerId: "t1", responseUrl: "https://hooks.slack.com/commands/x" },
        { timestamp: 1_700_000_000 },
      );
      await requests.slashCommand(
        { user: "U0ALICE", text: "help", triggerId: "t1", responseUrl: "https://hooks.slack.com/commands/x" },
        { timestamp: 1_700_000_000, changeBodyByte: true },
      );
      const [a, b] = received;
      expect(a!.body.length).toBe(b!.body.length);
      expect([...a!.body].filter((byte, i) => byte !== b!.body[i])).toHaveLength(1);
      expect(b!.headers["x-slack-signature"]).toBe(a!.headers["x-slack-signature"]);
      expect(a!.headers["x-slack-signature"]).toBe(signSlackRequest(SECRET, 1_700_000_000, a!.body));

      await requests.send("payload=%7B%7D", { omit: ["signature", "timestamp"] });
      expect(received[2]!.headers["x-slack-signature"]).toBeUndefined();
      expect(received[2]!.headers["x-slack-request-timestamp"]).toBeUndefined();
    });
  });

  describe("against a real Bolt app", () => {
    const emulator = new SlackEmulator({ botToken: TOKEN });
    let app: App;
    let requests: SlackRequests;
    const clicks: {
      actionId: string;
      value: string | undefined;
      userId: string;
      teamId: string | undefined;
      messageTs: string | undefined;
      triggerId: string;
    }[] = [];
    const submissions: { callbackId: string; privateMetadata: string; reason: string | null | undefined; userId: string }[] = [];
    const commands: { command: string; text: string; userId: string }[] = [];

    beforeAll(async () => {
      await emulator.start();
      app = new App({
        token: TOKEN,
        signingSecret: SECRET,
        deferInitialization: true,
        logger: silent,
        clientOptions: { slackApiUrl: emulator.url, retryConfig: { retries: 0 } },
      });
      app.action({ type: "block_actions", action_id: "approve" }, async ({ ack, body, action }) => {
        clicks.push({
          actionId: action.action_id,
          value: action.type === "button" ? action.value : undefined,
          userId: body.user.id,
          teamId: body.team?.id,
          messageTs: body.container.message_ts as string | undefined,
          triggerId: body.trigger_id,
        });
        await ack();
      });
      app.view("reject", async ({ ack, view, body }) => {
        submissions.push({
          callbackId: view.callback_id,
          privateMetadata: view.private_metadata,
          reason: view.state.values.reason?.reason?.value,
          userId: body.user.id,
        });
        await ack();
      });
      app.command("/countersign", async ({ ack, command, respond }) => {
        commands.push({ command: command.command, text: command.text, userId: command.user_id });
        await ack();
        await respond({ response_type: "ephemeral", text: `You said ${command.text}` });
      });
      await app.init();
      const server = await app.start({ port: 0, host: "127.0.0.1" });
      requests = new SlackRequests({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        signingSecret: SECRET,
        responseUrl: () => emulator.responseUrl(),
      });
    });
    afterEach(() => {
      clicks.length = 0;
      submissions.length = 0;
      commands.length = 0;
    });
    afterAll(async () => {
      await app.stop();
      await emulator.stop();
    });

    it("Bolt initialised against the emulator with auth.test", () => {
      expect(emulator.callsTo("auth.test").length).toBeGreaterThanOrEqual(1);
    });

    it("routes a signed block_actions click to the action listener", async () => {
      const value = JSON.stringify({ planId: "p1", hash: "sha256:abc" });
      const response = await requests.blockAction({
        user: { id: "U0ALICE", username: "alice" },
        actionId: "approve",
        value,
        messageTs: "1733140000.000100",
        triggerId: "trig-1",
      });
      expect(response.status).toBe(200);
      expect(clicks).toEqual([{ actionId: "approve", value, userId: "U0ALICE", teamId: "T0TEST", messageTs: "1733140000.000100", triggerId: "trig-1" }]);
    });

    it("routes a signed view_submission to the view listener with the reason", async () => {
      const response = await requests.viewSubmission({ user: "U0BOB", callbackId: "reject", privateMetadata: '{"planId":"p1"}', reason: "Wrong contact" });
      expect(response.status).toBe(200);
      expect(submissions).toEqual([{ callbackId: "reject", privateMetadata: '{"planId":"p1"}', reason: "Wrong contact", userId: "U0BOB" }]);
    });

    it("routes a signed slash command, and respond() reaches the emulator's response_url", async () => {
      const response = await requests.slashCommand({ user: "U0CAROL", text: "list" });
      expect(response.status).toBe(200);
      expect(commands).toEqual([{ command: "/countersign", text: "list", userId: "U0CAROL" }]);
      const post = await waitFor("respond() to post to response_url", () => emulator.responseUrlPosts[0]);
      expect(post.body).toMatchObject({ response_type: "ephemeral", text: "You said list" });
    });

    it.each([
      ["a corrupted signature", { corruptSignature: true }],
      ["a signature made with another secret", { signingSecret: "not-the-secret" }],
      ["one body byte changed after signing", { changeBodyByte: true }],
      ["no signature header", { omit: ["signature" as const] }],
      ["no timestamp header", { omit: ["timestamp" as const] }],
      ["a timestamp 6 minutes old", { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 }],
    ])("Bolt answers 401 to %s, and no listener runs", async (_name, options) => {
      const response = await requests.blockAction({ user: "U0ALICE", actionId: "approve", value: "v", messageTs: "1733140000.000100" }, options);
      expect(response.status).toBe(401);
      expect(clicks).toEqual([]);
    });

    it("Bolt answers 400 when the content type is not exactly application/x-www-form-urlencoded", async () => {
      const response = await requests.blockAction(
        { user: "U0ALICE", actionId: "approve", value: "v", messageTs: "1733140000.000100" },
        { contentType: "application/x-www-form-urlencoded; charset=utf-8" },
      );
      expect(response.status).toBe(400);
      expect(clicks).toEqual([]);
    });

    it("Bolt accepts a timestamp an hour in the future and an exact replay: both are Countersign's to refuse", async () => {
      const future = await requests.blockAction(
        { user: "U0ALICE", actionId: "approve", value: "v", messageTs: "1733140000.000100" },
        { timestamp: Math.floor(Date.now() / 1000) + 3600 },
      );
      expect(future.status).toBe(200);
      const replayed = await requests.replay();
      expect(replayed.status).toBe(200);
      expect(clicks).toHaveLength(2);
      expect(clicks[1]).toEqual(clicks[0]);
    });
  });
});
