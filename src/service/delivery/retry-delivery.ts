import { sql } from "drizzle-orm";
import { appendAudit } from "../records/audit.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { rightsOf, type Reader } from "../access/reader-rights.ts";

/** What a retry put back in its lane. */
export interface RetriedDelivery {
  id: number;
  lane: string;
  kind: string;
  planId: string | undefined;
}

/**
 * Puts a dead delivery back in its lane, due now with its attempts counted from zero, so the
 * outbox worker delivers it again in the lane's order. Only admins (top-level `admins`) may: a
 * retry sends a message or webhook again on everyone's behalf. The retry and its audit event
 * (who, which row, which lane, the error it had died of) commit together; a row no longer dead
 * (retried already, or never dead) is `not_found` and nothing is recorded.
 */
export async function retryDelivery(ctx: ServiceContext, input: { id: number; reader: Reader }): Promise<RetriedDelivery> {
  const { id, reader } = input;
  const rights = await rightsOf(ctx, reader, []);
  if (!rights.isAdmin) {
    throw new ServiceError(
      "not_an_admin",
      `only admins may retry a dead delivery (the top-level \`admins\` of the config: ${ctx.config.admins.join(", ") || "nobody yet"}); ${reader.userId} is not one of them, so nothing was retried`,
    );
  }
  const now = ctx.clock();
  return ctx.database.db.transaction(async (tx) => {
    const [row] = await ctx.database.rows<{
      id: number | string;
      lane: string;
      kind: string;
      plan_id: string | null;
      last_error: string | null;
      attempts: number;
    }>(
      sql`
      UPDATE outbox o SET dead_at = NULL, attempts = 0, available_at = ${now.toISOString()}
      FROM (SELECT id, attempts FROM outbox WHERE id = ${id} AND dead_at IS NOT NULL FOR UPDATE) before
      WHERE o.id = before.id
      RETURNING o.id, o.lane, o.kind, o.plan_id, o.last_error, before.attempts`,
      tx,
    );
    if (!row) throw new ServiceError("not_found", `there is no dead delivery ${id}: it was retried already, delivered, or never existed`);
    const retried = { id: Number(row.id), lane: row.lane, kind: row.kind, planId: row.plan_id ?? undefined };
    await appendAudit(tx, {
      planId: null,
      type: "outbox.retried",
      actor: { type: "user", userId: reader.userId, via: "web" },
      data: { outboxId: retried.id, lane: retried.lane, kind: retried.kind, planId: row.plan_id, attempts: row.attempts, lastError: row.last_error },
      at: now,
    });
    return retried;
  });
}
