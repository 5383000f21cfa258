import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { likenessOf, type Likeness } from "../../plan/alike.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import type { PlanStatus } from "../../plan/status.ts";
import { plans, slackChannelSlots, slackMessages } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";

/** A preview still queued in a channel's lane, in lane order (the next to be posted first). */
export interface WaitingPreview {
  planId: string;
  /** When the plan was submitted (ms since the epoch): how long it has waited already. */
  submittedAt: number;
  /** Risk as recorded in the plan's policy: a high-risk plan always gets its own preview. */
  highRisk: boolean;
}

/** A plan as one line of a digest, from its stored row (plan-supplied strings shown escaped). */
export interface DigestLine {
  planId: string;
  /** Agent-supplied. */
  title: string;
  /** The first action's target and op; `moreActions` counts the others. */
  target: string;
  op: string;
  moreActions: number;
  hash: string;
  /** ISO time. */
  expiresAt: string;
  status: PlanStatus;
  /** `PUBLIC_URL/plans/:id`: where the plan is reviewed and approved. */
  reviewUrl: string;
  /** What makes it alike to other plans (src/plan/alike.ts): alike pending lines are offered to review together. */
  likeness?: Likeness | undefined;
}

/**
 * The database side of Slack digests (src/slack/digest.ts): which previews wait in a channel's
 * lane, the plans as digest lines, and recording a posted digest. Raw SQL passes arrays and
 * timestamps as literals cast in SQL: drizzle's postgres.js driver does not convert them in `sql`.
 */

/**
 * The previews still queued in the lane of the outbox row `headRowId` (a preview being
 * delivered), in lane order, the head first: at most `limit`, enough to tell whether the queue
 * is late. Risk is read from the plan's recorded policy.
 */
export async function waitingPreviews(ctx: Pick<ServiceContext, "database">, input: { headRowId: number; limit: number }): Promise<WaitingPreview[]> {
  const rows = await ctx.database.rows<{ plan_id: string; created_at: string | Date; risk: string | null }>(sql`
    SELECT o.plan_id, p.created_at, (p.document::json #>> '{policy,risk,level}') AS risk
    FROM outbox o JOIN plans p ON p.id = o.plan_id
    WHERE o.lane = (SELECT lane FROM outbox WHERE id = ${input.headRowId}) AND o.priority = 0 AND o.kind = 'slack'
      AND o.delivered_at IS NULL AND o.dead_at IS NULL
    ORDER BY o.lane, o.priority, o.id
    LIMIT ${input.limit}`);
  return rows.map((r) => ({ planId: r.plan_id, submittedAt: new Date(r.created_at).getTime(), highRisk: r.risk === "high" }));
}

/** How long until `channel` may take its next post (its booked slot, shared by every replica); ≤ 0: now. */
export async function nextPostInMs(ctx: Pick<ServiceContext, "database">, channel: string): Promise<number> {
  const [slot] = await ctx.database.rows<{ wait_ms: string | number }>(sql`
    SELECT EXTRACT(EPOCH FROM (next_at - clock_timestamp())) * 1000 AS wait_ms FROM ${slackChannelSlots} WHERE channel = ${channel}`);
  return slot ? Number(slot.wait_ms) : 0;
}

type PlanRow = Pick<typeof plans.$inferSelect, "id" | "document" | "hash" | "status" | "expiresAt">;
const lineColumns = { id: plans.id, document: plans.document, hash: plans.hash, status: plans.status, expiresAt: plans.expiresAt };

/** The plans as digest lines, in the order asked (plans that do not exist are left out). */
export async function digestLinesOf(ctx: Pick<ServiceContext, "database" | "config">, planIds: readonly string[]): Promise<DigestLine[]> {
  if (planIds.length === 0) return [];
  const rows = await ctx.database.db
    .select(lineColumns)
    .from(plans)
    .where(inArray(plans.id, [...planIds]));
  const byId = new Map(rows.map((r) => [r.id, r]));
  return planIds.flatMap((id) => {
    const row = byId.get(id);
    return row ? [lineOf(ctx.config.publicUrl, row)] : [];
  });
}

/** The plans a posted digest lists, as they are now, in the order they were submitted. */
export async function digestAt(ctx: Pick<ServiceContext, "database" | "config">, message: { channel: string; ts: string }): Promise<DigestLine[]> {
  const rows = await ctx.database.db
    .select(lineColumns)
    .from(slackMessages)
    .innerJoin(plans, eq(plans.id, slackMessages.planId))
    .where(and(eq(slackMessages.channel, message.channel), eq(slackMessages.ts, message.ts), sql`${slackMessages.digest}`))
    .orderBy(asc(plans.createdAt), asc(plans.id));
  return rows.map((r) => lineOf(ctx.config.publicUrl, r));
}

/**
 * Records a posted digest, in one statement: each listed plan is shown at the digest's channel
 * and ts (its later events reply in the digest's thread and update the digest), and its queued
 * preview row is delivered by the digest. A plan already shown (its preview posted before a
 * crash was recorded) keeps its first message.
 */
export async function recordDigest(
  ctx: Pick<ServiceContext, "database" | "clock">,
  input: { channel: string; ts: string; planIds: readonly string[] },
): Promise<void> {
  const { channel, ts, planIds } = input;
  if (planIds.length === 0) return;
  const ids = sql`ARRAY[${sql.join(
    planIds.map((id) => sql`${id}`),
    sql`, `,
  )}]::uuid[]`;
  await ctx.database.rows(sql`
    WITH shown AS (
      INSERT INTO slack_messages (plan_id, channel, ts, digest)
      SELECT id, ${channel}, ${ts}, true FROM unnest(${ids}) AS id
      ON CONFLICT (plan_id) DO NOTHING)
    UPDATE outbox SET delivered_at = ${ctx.clock().toISOString()}, last_error = NULL
    WHERE plan_id = ANY (${ids}) AND kind = 'slack' AND priority = 0 AND delivered_at IS NULL AND dead_at IS NULL`);
}

function lineOf(publicUrl: string, row: PlanRow): DigestLine {
  const doc = row.document as PlanDocument;
  const [first] = doc.actions;
  return {
    planId: row.id,
    title: doc.title,
    target: first?.target ?? "",
    op: first?.op ?? "",
    moreActions: Math.max(doc.actions.length - 1, 0),
    hash: row.hash,
    expiresAt: row.expiresAt.toISOString(),
    status: row.status,
    reviewUrl: `${publicUrl}/plans/${row.id}`,
    likeness: likenessOf(doc),
  };
}
