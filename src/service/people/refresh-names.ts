import { eq, lte } from "drizzle-orm";
import { people } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { cleanDisplayName } from "./display-name.ts";
import { takeWanted } from "./refresh-queue.ts";

/** A person's name is asked for at most once a day. */
export const NAME_REFRESH_MS = 24 * 60 * 60 * 1000;
/** After a failure that may pass (an outage, a rate limit), the name is asked for again this much later. */
export const NAME_RETRY_MS = 60 * 60 * 1000;
/** People asked about per run of the loop; users.info allows about a hundred a minute. */
const PER_RUN = 20;

type RefreshContext = Pick<ServiceContext, "database" | "clock" | "people" | "logger">;

/**
 * The background refresh: for each person a page wanted named (names-of.ts), claims the row by
 * pushing next_at a day ahead (a no-op when another replica or an earlier run already did), asks
 * Slack, and stores the name. A person Slack cannot answer for keeps the name they had, or none.
 * Returns how many people Slack was asked about.
 */
export async function refreshNames(ctx: RefreshContext): Promise<number> {
  const directory = ctx.people;
  if (!directory) return 0;
  let asked = 0;
  const failures = new Map<string, number>();
  for (const userId of takeWanted(ctx.database, PER_RUN)) {
    if (!(await claim(ctx, userId))) continue;
    asked++;
    const answer = await directory.displayNameOf(userId);
    if ("failed" in answer) {
      failures.set(answer.failed, (failures.get(answer.failed) ?? 0) + 1);
      if (!answer.lasting) await retryLater(ctx, userId);
      continue;
    }
    await ctx.database.db
      .update(people)
      .set({ displayName: cleanDisplayName(answer.name) ?? null, fetchedAt: ctx.clock() })
      .where(eq(people.userId, userId));
  }
  for (const [reason, count] of failures) {
    const fix = reason === "missing_scope" ? "; add the bot scope users:read (manifest.yml) and reinstall the Slack app" : "";
    ctx.logger.warn({ reason, people: count }, `Slack could not name ${count} person(s) (${reason}): pages show their ids${fix}`);
  }
  return asked;
}

/** Takes the right to ask about this person now: true when no one asked within the day (or since a passing failure). */
async function claim(ctx: RefreshContext, userId: string): Promise<boolean> {
  const now = ctx.clock();
  const next = new Date(now.getTime() + NAME_REFRESH_MS);
  const claimed = await ctx.database.db
    .insert(people)
    .values({ userId, nextAt: next })
    .onConflictDoUpdate({ target: people.userId, set: { nextAt: next }, setWhere: lte(people.nextAt, now) })
    .returning({ userId: people.userId });
  return claimed.length > 0;
}

async function retryLater(ctx: RefreshContext, userId: string): Promise<void> {
  await ctx.database.db
    .update(people)
    .set({ nextAt: new Date(ctx.clock().getTime() + NAME_RETRY_MS) })
    .where(eq(people.userId, userId));
}
