import type { WebClient } from "@slack/web-api";
import type { ApproverDirectory } from "../service/context.ts";

/** Membership changes rarely; a minute of staleness is the price of not asking Slack on every click. */
export const GROUP_CACHE_MS = 60_000;

/** User group membership from Slack, cached briefly. Failures are never cached: the next click asks again. */
export function slackDirectory(client: WebClient, now: () => number = Date.now): ApproverDirectory {
  const cache = new Map<string, { members: readonly string[]; at: number }>();
  return {
    async membersOf(groupId) {
      const hit = cache.get(groupId);
      if (hit && now() - hit.at < GROUP_CACHE_MS) return hit.members;
      const answer = await client.usergroups.users.list({ usergroup: groupId });
      const members = answer.users ?? [];
      cache.set(groupId, { members, at: now() });
      return members;
    },
  };
}
