import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/load.ts";
import { MAX_SLACK_BODY_BYTES } from "../../src/slack/hono-receiver.ts";
import { pglite } from "../support/databases.ts";
import { useServer } from "../support/use-harness.ts";
import { testConfig } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";
import { SlackRequests, signSlackRequest } from "../support/slack-requests.ts";
import { waitFor } from "../support/wait-for.ts";
import { HUNDRED_MB, streamPost } from "../support/stream-post.ts";

const SIGNING_SECRET = "slack-signing-secret-for-body-limits";
function freshHeaders(signature = "v0=" + "0".repeat(64)): Record<string, string> {
  return { "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000)), "x-slack-signature": signature };
}

/** Slack's `/slack/events` before authentication: nobody may make the server hold more than 1 MiB. */
describe("Slack request body limit", () => {
  let slack: SlackEmulator;
  const s = useServer(pglite, {
    config: async (): Promise<Config> => {
      slack = new SlackEmulator({ teamId: "T0TEST" });
      await slack.start();
      return {
        ...testConfig({}),
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
  });
  let eventsUrl: string;
  beforeAll(async () => {
    eventsUrl = `${s.server.url}/slack/events`;
  });
  afterAll(async () => {
    await slack?.stop();
  });

  it("refuses a 100 MB post with a Content-Length at once, before reading it", async () => {
    const sent = await streamPost(eventsUrl, HUNDRED_MB, { chunked: false, headers: freshHeaders() });
    expect(sent.status).toBe(413);
    expect(JSON.parse(sent.body)).toMatchObject({ error: { code: "payload_too_large" } });
    expect(sent.ms).toBeLessThan(10_000);
    expect(sent.sentBytes).toBeLessThan(HUNDRED_MB / 4);
  });

  it("refuses a chunked 100 MB post once it passes 1 MiB, without waiting for the rest", async () => {
    const sent = await streamPost(eventsUrl, HUNDRED_MB, { chunked: true, headers: freshHeaders() });
    expect(sent.status).toBe(413);
    expect(sent.ms).toBeLessThan(10_000);
    expect(sent.sentBytes).toBeLessThan(HUNDRED_MB / 4);
  });

  it("refuses a chunked 100 MB post without signing headers before reading a byte of it", async () => {
    const sent = await streamPost(eventsUrl, HUNDRED_MB, { chunked: true });
    expect(sent.status).toBe(401);
    expect(JSON.parse(sent.body).error.message).toMatch(/missing X-Slack-Request-Timestamp or X-Slack-Signature/);
    expect(sent.ms).toBeLessThan(10_000);
    expect(sent.sentBytes).toBeLessThan(HUNDRED_MB / 4);
  });

  it("refuses a body stale by its timestamp before reading it", async () => {
    const stale = { "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000) - 3600), "x-slack-signature": "v0=" + "0".repeat(64) };
    const sent = await streamPost(eventsUrl, HUNDRED_MB, { chunked: true, headers: stale });
    expect(sent.status).toBe(401);
    expect(JSON.parse(sent.body).error.message).toMatch(/timestamp is \d+ s away from now/);
    expect(sent.sentBytes).toBeLessThan(HUNDRED_MB / 4);
  });

  it("four 100 MB posts at once leave the server's memory where it was (within a generous bound)", async () => {
    const before = process.memoryUsage().rss;
    const sent = await Promise.all([
      streamPost(eventsUrl, HUNDRED_MB, { chunked: true, headers: freshHeaders() }),
      streamPost(eventsUrl, HUNDRED_MB, { chunked: false, headers: freshHeaders() }),
      streamPost(eventsUrl, HUNDRED_MB, { chunked: true, headers: freshHeaders() }),
      streamPost(eventsUrl, HUNDRED_MB, { chunked: false, headers: freshHeaders() }),
    ]);
    const grownMb = (process.memoryUsage().rss - before) / 1024 / 1024;
    expect(sent.map((s) => s.status)).toEqual([413, 413, 413, 413]);
    // Before the cap the same four posts took the server from 145 MB to 931 MB.
    expect(grownMb, `RSS grew ${grownMb.toFixed(1)} MB`).toBeLessThan(40);
  });

  it("refuses a signed body of 1 MiB + 1 byte, chunked or declared", async () => {
    const body = Buffer.alloc(MAX_SLACK_BODY_BYTES + 1, "a");
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = { "x-slack-request-timestamp": timestamp, "x-slack-signature": signSlackRequest(SIGNING_SECRET, timestamp, body) };
    const declared = await fetch(eventsUrl, { method: "POST", headers: { ...headers, "content-type": "application/x-www-form-urlencoded" }, body });
    expect(declared.status).toBe(413);
    const chunked = await streamPost(eventsUrl, body.length, { chunked: true, headers });
    expect(chunked.status).toBe(413);
  });

  it("still answers a signed body of exactly 1 MiB, and ordinary signed requests", async () => {
    const challenge = "c".repeat(40);
    const prefix = JSON.stringify({ type: "url_verification", challenge, padding: "" }).slice(0, -2);
    const body = Buffer.from(prefix + "x".repeat(MAX_SLACK_BODY_BYTES - Buffer.byteLength(prefix) - 2) + '"}');
    expect(body.length).toBe(MAX_SLACK_BODY_BYTES);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const response = await fetch(eventsUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signSlackRequest(SIGNING_SECRET, timestamp, body),
      },
      body,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ challenge });

    // An ordinary interaction, signed the way Slack signs it, still reaches the listeners.
    const clicks = new SlackRequests({ baseUrl: s.server.url, signingSecret: SIGNING_SECRET, teamId: "T0TEST" });
    const click = await clicks.blockAction({
      user: "U0ALICE",
      actionId: "approve",
      value: "not a plan",
      channelId: "C0REVIEW",
      messageTs: "1733140000.000100",
    });
    expect(click.status).toBe(200);
    const told = await waitFor("the clicker to be told why nothing was recorded", () => slack.ephemerals.find((e) => e.user === "U0ALICE"));
    expect(told.text).toMatch(/nothing was recorded/);
    // The same click with a forged signature is still refused.
    expect(
      (
        await clicks.blockAction(
          { user: "U0ALICE", actionId: "approve", value: "not a plan", channelId: "C0REVIEW", messageTs: "1733140000.000100" },
          { signingSecret: "forged" },
        )
      ).status,
    ).toBe(401);
  });
});
