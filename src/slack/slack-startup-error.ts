import { ErrorCode, type WebAPIPlatformError, type WebAPIRequestError } from "@slack/web-api";
import { StartupError } from "../util/startup-errors.ts";

/** Which credential a start-up call used, and where people find a good one. */
const TOKENS = {
  SLACK_BOT_TOKEN: {
    what: "the bot token",
    fix: "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page, reinstalling the app if it was revoked",
  },
  SLACK_APP_TOKEN: {
    what: "the app-level token",
    fix: "create one with the connections:write scope under the app's Basic Information → App-Level Tokens (xapp-…), with Socket Mode enabled",
  },
} as const;

/** Slack's answers that mean the token itself is wrong, not that Slack is having a bad moment. */
const REFUSED = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "not_allowed_token_type",
  "missing_scope",
  "team_disabled",
  "user_removed_from_team",
]);

/**
 * A Slack call made while starting (auth.test with the bot token, apps.connections.open with the
 * app token) that failed because of configuration, told as the variable to fix; undefined for
 * anything else, which keeps its stack.
 */
export function slackStartupError(err: unknown, variable: keyof typeof TOKENS, apiUrl: string | undefined): StartupError | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === ErrorCode.PlatformError) {
    const answer = (err as WebAPIPlatformError).data.error;
    if (REFUSED.has(answer)) return new StartupError(variable, `Slack refused ${TOKENS[variable].what} (${answer}); ${TOKENS[variable].fix}`);
    return undefined;
  }
  if (code === ErrorCode.RequestError) {
    const cause = (err as WebAPIRequestError).original?.message ?? "no answer";
    const where = apiUrl ?? "https://slack.com/api/";
    return new StartupError(
      apiUrl ? "SLACK_API_URL" : variable,
      `cannot reach Slack's Web API at ${where} (${cause}); check this machine's network and proxy${apiUrl ? ", or fix SLACK_API_URL" : ""}`,
    );
  }
  return undefined;
}
