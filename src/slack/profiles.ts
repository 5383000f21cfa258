import { WebAPIPlatformError, type WebClient } from "@slack/web-api";
import type { Profile, ProfileDirectory } from "../service/context.ts";

/** Slack answers meaning there is no such person to delegate to. */
const NO_SUCH_PERSON = new Set(["user_not_found", "user_not_visible"]);

/**
 * Whether someone is a bot, deactivated, and their time zone, from users.info (bot scope
 * users:read). Asked when a delegation is made, never on a click's path.
 */
export function slackProfiles(client: WebClient): ProfileDirectory {
  return {
    async profileOf(userId): Promise<Profile | undefined> {
      try {
        const { user } = await client.users.info({ user: userId });
        if (!user) return undefined;
        return {
          isBot: user.is_bot === true || userId === "USLACKBOT",
          inactive: user.deleted === true,
          timeZone: typeof user.tz === "string" && user.tz !== "" ? user.tz : undefined,
        };
      } catch (err) {
        if (err instanceof WebAPIPlatformError && NO_SUCH_PERSON.has(err.data.error)) return undefined;
        throw new Error(`Slack could not say who ${userId} is (${err instanceof WebAPIPlatformError ? err.data.error : (err as Error).message})`);
      }
    },
  };
}
