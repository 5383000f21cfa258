import { sql } from "drizzle-orm";
import type { ServiceContext } from "./context.ts";

/** One audit event as exported for a SIEM: what happened, who did it, and the hashes that prove it. */
export interface ExportedEvent {
  id: number;
  at: string;
  type: string;
  planId: string | null;
  actor: unknown;
  data: unknown;
  prevHash: string;
  hash: string;
  /** The transaction that wrote it (null for events before the chains were split); a seal covers it when xidTo > xid. */
  xid: string | null;
}

interface Row { id: number | string; at: Date | string; type: string; plan_id: string | null; actor: string; data: string; prev_hash: string; hash: string; xid: string | null }

/**
 * The audit trail from `since` on, oldest first, in batches read by id (the primary key), so a
 * large export holds neither a transaction nor the whole log in memory.
 */
export async function* exportAudit(ctx: Pick<ServiceContext, "database">, input: { since: Date; batch?: number }): AsyncGenerator<ExportedEvent> {
  const batch = input.batch ?? 2000;
  for (let after = 0; ;) {
    const rows = await ctx.database.rows<Row>(sql`
      SELECT id, at, type, plan_id, actor, data, prev_hash, hash, xid::text AS xid FROM audit_events
       WHERE id > ${after} AND at >= ${input.since.toISOString()}::timestamptz ORDER BY id LIMIT ${batch}`);
    for (const r of rows) {
      yield { id: Number(r.id), at: new Date(r.at).toISOString(), type: r.type, planId: r.plan_id, actor: JSON.parse(r.actor), data: JSON.parse(r.data), prevHash: r.prev_hash, hash: r.hash, xid: r.xid };
    }
    if (rows.length < batch) return;
    after = Number(rows.at(-1)!.id);
  }
}
