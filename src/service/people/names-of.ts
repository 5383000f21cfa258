import { inArray, sql } from "drizzle-orm";
import { people } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { isSlackUserId } from "./display-name.ts";
import { wantNames } from "./refresh-queue.ts";

/** A person's display name, and whether another person is known by the same one (ignoring case). */
export interface PersonName {
  name: string;
  shared: boolean;
}

/** Display names by user id; a person missing from it is shown by id. */
export type PeopleNames = ReadonlyMap<string, PersonName>;

/** The most people one page names; the rest are shown by id. */
const MAX_PER_READ = 500;

/**
 * The display names of the people a page shows, in one query. A person not yet named, or whose
 * name is due for a refresh, is queued for the background refresh (refresh-names.ts): Slack is
 * never asked on a request's path, so a page shows the id, or the name it had, meanwhile.
 */
export async function namesOf(ctx: Pick<ServiceContext, "database" | "clock" | "people">, input: { userIds: Iterable<string> }): Promise<PeopleNames> {
  const ids = [...new Set(input.userIds)].filter(isSlackUserId).slice(0, MAX_PER_READ);
  if (ids.length === 0) return new Map();
  const rows = await ctx.database.db
    .select({
      userId: people.userId,
      displayName: people.displayName,
      nextAt: people.nextAt,
      // Spelled out: drizzle leaves a lone table's columns unqualified, which inside the subquery would mean "other".
      shared: sql<boolean>`exists (select 1 from people as other where lower(other.display_name) = lower(people.display_name) and other.user_id <> people.user_id)`,
    })
    .from(people)
    .where(inArray(people.userId, ids));
  if (ctx.people) {
    const now = ctx.clock().getTime();
    const fresh = new Set(rows.filter((r) => r.nextAt.getTime() > now).map((r) => r.userId));
    wantNames(
      ctx.database,
      ids.filter((id) => !fresh.has(id)),
    );
  }
  return new Map(rows.flatMap((r) => (r.displayName === null ? [] : [[r.userId, { name: r.displayName, shared: r.shared === true }] as const])));
}
