import { eq, sql } from "drizzle-orm";
import { plans, slackChannelSlots, slackMessages } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { planView, type PlanView } from "../lifecycle/plan-view.ts";

/** Where a plan's preview was posted in Slack: its thread is where every later event goes. */
export interface PostedPreview {
  channel: string;
  ts: string;
  /** The message is a digest listing this plan among others (src/slack/digest.ts), not its own preview. */
  digest?: boolean;
  /** The thread it is a reply in (a re-plan's preview, in its first version's thread); absent: `ts` is the thread. */
  threadTs?: string | null;
}

/** Where a plan's replies go: the thread its preview started, or the one it was posted in. */
export const threadOf = (posted: PostedPreview): string => posted.threadTs ?? posted.ts;

/** The plan as reviewers see it in Slack (secrets masked), or undefined when there is no such plan. */
export async function slackViewOf(ctx: ServiceContext, planId: string): Promise<PlanView | undefined> {
  const [row] = await ctx.database.db.select().from(plans).where(eq(plans.id, planId));
  return row ? planView(ctx.database.db, ctx.config.publicUrl, row, "reviewer", ctx.redaction) : undefined;
}

export async function postedPreviewOf(ctx: ServiceContext, planId: string): Promise<PostedPreview | undefined> {
  const [posted] = await ctx.database.db
    .select({ channel: slackMessages.channel, ts: slackMessages.ts, digest: slackMessages.digest, threadTs: slackMessages.threadTs })
    .from(slackMessages)
    .where(eq(slackMessages.planId, planId));
  return posted;
}

/** Records the preview's message once; a redelivery that posted again keeps the first. */
export async function recordPostedPreview(ctx: ServiceContext, planId: string, posted: PostedPreview): Promise<void> {
  await ctx.database.db
    .insert(slackMessages)
    .values({ planId, channel: posted.channel, ts: posted.ts, threadTs: posted.threadTs ?? null })
    .onConflictDoNothing();
}

/**
 * Books this channel's next free slot, shared by every replica through the database: each post
 * books `spacingMs` after the last one booked, on the database's clock so replicas with skewed
 * clocks agree. Returns how long to wait before posting (may be ≤ 0).
 */
export async function bookChannelSlot(ctx: ServiceContext, channel: string, spacingMs: number): Promise<number> {
  const [slot] = await ctx.database.rows<{ wait_ms: string | number }>(sql`
    INSERT INTO ${slackChannelSlots} (channel, next_at) VALUES (${channel}, clock_timestamp() + ${`${spacingMs} milliseconds`}::interval)
    ON CONFLICT (channel) DO UPDATE SET next_at = GREATEST(${slackChannelSlots.nextAt}, clock_timestamp()) + ${`${spacingMs} milliseconds`}::interval
    RETURNING EXTRACT(EPOCH FROM (next_at - clock_timestamp())) * 1000 - ${spacingMs} AS wait_ms`);
  return Number(slot!.wait_ms);
}
