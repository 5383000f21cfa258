import type { ServerConfig } from "../../config/load.ts";
import { bounded, type CheckResult, fail, pass } from "./check.ts";

type EnabledSlack = Extract<ServerConfig["slack"], { enabled: true }>;

/** Slack's answers that mean the token itself is refused. */
const TOKEN_REFUSED = new Set(["invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type"]);
const FIX_TOKEN = "copy the Bot User OAuth Token (xoxb-…) from the Slack app's OAuth & Permissions page into SLACK_BOT_TOKEN";

/** `auth.test` with the bot token: Slack knows it, and which team and bot it is. */
export function slackAuth(slack: EnabledSlack): Promise<CheckResult> {
  return bounded(`Slack: auth.test at ${apiBase(slack)}`, "check this machine's network and proxy, or SLACK_API_URL", async (signal) => {
    const answer = await callSlack(slack, "auth.test", {}, signal);
    if (answer.ok === true)
      return pass(`Slack: SLACK_BOT_TOKEN accepted (team ${String(answer.team)} ${String(answer.team_id)}, bot user ${String(answer.user_id)})`);
    const error = String(answer.error);
    return fail(
      `Slack: auth.test refuses SLACK_BOT_TOKEN (${error})`,
      TOKEN_REFUSED.has(error) ? FIX_TOKEN : `see https://api.slack.com/methods/auth.test for '${error}'`,
    );
  });
}

/** Every channel the server posts to, with the keys that name it: review channels, escalation, audit. */
export function slackChannels(config: ServerConfig): { channel: string; keys: string[] }[] {
  if (!config.slack.enabled) return [];
  const named: [string | undefined, string][] = [
    [config.slack.reviewChannel, "slack.reviewChannel"],
    ...Object.entries(config.targets).map(([name, t]): [string | undefined, string] => [t.policy?.reviewChannel, `targets.${name}.policy.reviewChannel`]),
    [config.slack.escalationChannel, "slack.escalationChannel"],
    [config.slack.auditChannel, "slack.auditChannel"],
  ];
  const channels = new Map<string, string[]>();
  for (const [channel, key] of named) if (channel) channels.set(channel, [...(channels.get(channel) ?? []), key]);
  return [...channels].map(([channel, keys]) => ({ channel, keys }));
}

/** `conversations.info`: the channel exists, is not archived, and the bot is a member (it cannot post otherwise). */
export function slackChannel(slack: EnabledSlack, channel: string, keys: string[]): Promise<CheckResult> {
  const what = `Slack: channel ${channel} (${keys.join(", ")})`;
  const invite = `invite the bot: '/invite @Countersign' in ${channel}`;
  return bounded(what, "check this machine's network and proxy, or SLACK_API_URL", async (signal) => {
    const answer = await callSlack(slack, "conversations.info", { channel }, signal);
    if (answer.ok !== true) {
      const error = String(answer.error);
      if (error === "channel_not_found")
        return fail(
          `${what}: not found`,
          `check the id (the channel's details, at the bottom); a private channel is found only once the bot is in it: ${invite}`,
        );
      if (error === "missing_scope")
        return fail(
          `${what}: the app lacks a scope to read channels`,
          "add the bot scopes channels:read and groups:read (manifest.yml), and reinstall the app",
        );
      return fail(
        `${what}: conversations.info answers '${error}'`,
        TOKEN_REFUSED.has(error) ? FIX_TOKEN : `see https://api.slack.com/methods/conversations.info for '${error}'`,
      );
    }
    const info = (answer.channel ?? {}) as { name?: unknown; is_member?: unknown; is_archived?: unknown };
    const name = typeof info.name === "string" ? ` #${info.name}` : "";
    if (info.is_archived === true) return fail(`${what}: #${String(info.name)} is archived`, `unarchive it, or name another channel in ${keys.join(", ")}`);
    if (info.is_member !== true) return fail(`${what}: the bot is not a member of${name}`, invite);
    return pass(`${what}: the bot is a member of${name}`);
  });
}

/** How Slack reaches the server: Socket Mode with the app token, else HTTP with the signing secret. */
export function slackMode(slack: EnabledSlack, publicUrl: string): CheckResult {
  if (slack.appToken) return pass("Slack: Socket Mode, SLACK_APP_TOKEN set (the server connects out to Slack; no signing secret needed)");
  if (slack.signingSecret) return pass(`Slack: HTTP mode, SLACK_SIGNING_SECRET set; the app's request URLs must be ${publicUrl}/slack/events`);
  return fail(
    "Slack: neither SLACK_SIGNING_SECRET (HTTP mode) nor SLACK_APP_TOKEN (Socket Mode) is set",
    "set the app's signing secret (Basic Information) as SLACK_SIGNING_SECRET, or an app-level token with connections:write as SLACK_APP_TOKEN",
  );
}

function apiBase(slack: EnabledSlack): string {
  const base = slack.apiUrl ?? "https://slack.com/api/";
  return base.endsWith("/") ? base : `${base}/`;
}

/** One Web API call with the bot token, its JSON answer (`ok` false included); a non-JSON answer or an HTTP error throws. */
async function callSlack(slack: EnabledSlack, method: string, args: Record<string, string>, signal: AbortSignal): Promise<Record<string, unknown>> {
  const response = await fetch(new URL(method, apiBase(slack)), {
    method: "POST",
    headers: { authorization: `Bearer ${slack.botToken}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(args).toString(),
    redirect: "manual",
    signal,
  });
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${method}${response.status === 429 ? " (rate limited; try again in a minute)" : ""}`);
  return (await response.json()) as Record<string, unknown>;
}
