import { WebAPIPlatformError, type WebClient } from "@slack/web-api";
import type { DisplayNameAnswer, PeopleDirectory } from "../service/context.ts";

/** Slack answers for one person that asking again cannot change. */
const NO_SUCH_PERSON = new Set(["user_not_found", "user_not_visible"]);
/** Slack answers that pass by themselves; any other (missing_scope, invalid_auth …) waits a day before the next ask. */
const PASSING = new Set(["ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"]);

/**
 * People's display names from users.info (bot scope users:read): the profile's display name,
 * else the real name, else the username. Every failure is an answer: the page shows the id.
 */
export function slackPeople(client: WebClient): PeopleDirectory {
  return {
    async displayNameOf(userId): Promise<DisplayNameAnswer> {
      try {
        const { user } = await client.users.info({ user: userId });
        const names = [user?.profile?.display_name, user?.profile?.real_name, user?.real_name, user?.name];
        return { name: names.find((n) => typeof n === "string" && n.trim() !== "") };
      } catch (err) {
        if (err instanceof WebAPIPlatformError) {
          const code = err.data.error;
          if (NO_SUCH_PERSON.has(code)) return { name: undefined };
          return { failed: code, lasting: !PASSING.has(code) };
        }
        // Not an answer from Slack (unreachable, HTTP 5xx, still rate-limited after the retry): it may pass.
        return { failed: String((err as { code?: unknown }).code ?? "unreachable"), lasting: false };
      }
    },
  };
}
