import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { slackSignature, whyUnsigned } from "../../../src/slack/verify-request.ts";

// Slack's own example from "Verifying requests from Slack".
const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const TIMESTAMP = "1531420618";
const BODY =
  "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
const at = (offsetSeconds: number) => new Date((Number(TIMESTAMP) + offsetSeconds) * 1000);

describe("Slack request signatures", () => {
  it("reproduces Slack's official example", () => {
    expect(slackSignature(SECRET, TIMESTAMP, BODY)).toBe(SIGNATURE);
    expect(whyUnsigned(SECRET, { rawBody: BODY, timestamp: TIMESTAMP, signature: SIGNATURE }, at(0))).toBeUndefined();
  });

  it.each([
    ["5 minutes old", at(300), undefined],
    ["5 minutes early", at(-300), undefined],
    ["older than 5 minutes", at(301), /away from now/],
    ["from more than 5 minutes in the future (Bolt would accept it)", at(-301), /away from now/],
  ])("a request %s", (_name, now, why) => {
    const result = whyUnsigned(SECRET, { rawBody: BODY, timestamp: TIMESTAMP, signature: SIGNATURE }, now);
    if (why === undefined) expect(result).toBeUndefined();
    else expect(result).toMatch(why);
  });

  it.each([
    ["one body byte changed", { rawBody: BODY.replace("roadrunner", "roadrunnes") }, /does not match/],
    ["another secret", { secret: "another-secret" }, /does not match/],
    ["no signature", { signature: undefined }, /missing/],
    ["no timestamp", { timestamp: undefined }, /missing/],
    ["a malformed timestamp", { timestamp: "15314e20618" }, /malformed/],
    ["a truncated signature", { signature: SIGNATURE.slice(0, -1) }, /does not match/],
  ] as const)("refuses %s", (_name, change, why) => {
    const request = { rawBody: BODY, timestamp: TIMESTAMP as string | undefined, signature: SIGNATURE as string | undefined, ...change };
    expect(whyUnsigned("secret" in change ? change.secret : SECRET, request, at(0))).toMatch(why);
  });
});

/** The parts of Slack's app manifest schema that matter here (https://api.slack.com/reference/manifests). */
const Manifest = z.strictObject({
  _metadata: z.strictObject({ major_version: z.literal(1), minor_version: z.int() }),
  display_information: z.strictObject({
    name: z.string().min(1).max(35),
    description: z.string().max(140),
    background_color: z.string().regex(/^#[0-9a-fA-F]{6}$/),
    long_description: z.string().min(175).max(4000),
  }),
  features: z.strictObject({
    app_home: z
      .strictObject({ home_tab_enabled: z.boolean(), messages_tab_enabled: z.boolean(), messages_tab_read_only_enabled: z.boolean().optional() })
      .optional(),
    bot_user: z.strictObject({
      display_name: z
        .string()
        .min(1)
        .max(80)
        .regex(/^[a-z0-9._-]+$/i),
      always_online: z.boolean(),
    }),
    slash_commands: z
      .array(
        z.strictObject({
          command: z.string().regex(/^\/[a-z0-9_-]{1,31}$/),
          url: z.url({ protocol: /^https$/ }),
          description: z.string().min(1).max(2000),
          usage_hint: z.string().max(1000),
          should_escape: z.boolean(),
        }),
      )
      .min(1)
      .max(50),
  }),
  oauth_config: z.strictObject({
    redirect_urls: z
      .array(z.url({ protocol: /^https$/ }))
      .max(1000)
      .optional(),
    scopes: z.strictObject({ bot: z.array(z.string()).min(1), user: z.array(z.string()).optional() }),
  }),
  settings: z.strictObject({
    event_subscriptions: z
      .strictObject({
        request_url: z.url({ protocol: /^https$/ }),
        bot_events: z
          .array(z.string().regex(/^[a-z_]+$/))
          .min(1)
          .max(100),
      })
      .optional(),
    interactivity: z.strictObject({ is_enabled: z.boolean(), request_url: z.url({ protocol: /^https$/ }) }),
    org_deploy_enabled: z.boolean(),
    socket_mode_enabled: z.boolean(),
    token_rotation_enabled: z.boolean(),
  }),
});

describe("manifest.yml", () => {
  const manifest = parse(readFileSync(fileURLToPath(new URL("../../../manifest.yml", import.meta.url)), "utf8")) as z.infer<typeof Manifest>;

  it("is a valid app manifest", () => {
    expect(() => Manifest.parse(manifest)).not.toThrow();
  });

  it("asks for the scopes Countersign uses and no more", () => {
    expect([...manifest.oauth_config.scopes.bot].sort()).toEqual(["channels:read", "chat:write", "commands", "groups:read", "usergroups:read", "users:read"]);
    // Sign in with Slack's OpenID Connect scopes only: no user token that could act as a person.
    expect([...(manifest.oauth_config.scopes.user ?? [])].sort()).toEqual(["email", "openid", "profile"]);
  });

  it("sends Sign in with Slack back to /auth/slack/callback", () => {
    expect(manifest.oauth_config.redirect_urls?.map((u) => new URL(u).pathname)).toEqual(["/auth/slack/callback"]);
  });

  it("points the slash command and interactivity at /slack/events", () => {
    expect(manifest.features.slash_commands.map((c) => c.command)).toEqual(["/countersign"]);
    expect(new URL(manifest.settings.interactivity.request_url).pathname).toBe("/slack/events");
    expect(new URL(manifest.features.slash_commands[0]!.url).pathname).toBe("/slack/events");
  });

  it("enables the Home tab and sends app_home_opened to /slack/events", () => {
    expect(manifest.features.app_home?.home_tab_enabled).toBe(true);
    expect(manifest.settings.event_subscriptions?.bot_events).toEqual(["app_home_opened"]);
    expect(new URL(manifest.settings.event_subscriptions!.request_url).pathname).toBe("/slack/events");
  });
});
