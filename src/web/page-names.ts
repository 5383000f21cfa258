import type { ServiceContext } from "../service/context.ts";
import { cleanDisplayName, namesOf, type PeopleNames } from "../service/people/index.ts";
import type { WebSession } from "../service/sign-in/index.ts";

/**
 * The names a page shows, the reader's among them, in one query: the session comes back named
 * for the header, by the name it was signed in with (Sign in with Slack's) or else the display name.
 */
export async function pageNames(
  ctx: Pick<ServiceContext, "database" | "clock" | "people">,
  reader: WebSession,
  others: readonly string[] = [],
): Promise<{ reader: WebSession; names: PeopleNames }> {
  const names = await namesOf(ctx, { userIds: [reader.userId, ...others] });
  return { reader: { ...reader, name: cleanDisplayName(reader.name ?? undefined) ?? names.get(reader.userId)?.name ?? null }, names };
}
