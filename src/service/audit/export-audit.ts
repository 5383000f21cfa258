import { sql } from "drizzle-orm";
import type { ServiceContext } from "../context.ts";

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

/**
 * An event a retention purge deleted, as the checkpoint it left states it: no type, actor or data
 * any more, only what its seal and its plan's chain were computed over, and which purge took it.
 */
export interface ExportedPrunedEvent {
  id: number;
  at: string;
  planId: string;
  prevHash: string;
  hash: string;
  xid: string;
  /** The purge, as its purges row tells it (null when that row is missing). */
  pruned: { purge: number; at: string | null; reason: string | null };
}

interface Row {
  id: number | string;
  at: Date | string;
  type: string | null;
  plan_id: string | null;
  actor: string | null;
  data: string | null;
  prev_hash: string;
  hash: string;
  xid: string | null;
  purge_id: number | string | null;
  purged_at: Date | string | null;
  reason: string | null;
}

/**
 * The audit trail from `since` on, oldest first, in batches read by id (the primary key), so a
 * large export holds neither a transaction nor the whole log in memory. Where a purge pruned
 * events, their checkpoint lines come in their place (same id order), so the export still holds
 * every line its seals cover.
 */
export async function* exportAudit(
  ctx: Pick<ServiceContext, "database">,
  input: { since: Date; batch?: number },
): AsyncGenerator<ExportedEvent | ExportedPrunedEvent> {
  const batch = input.batch ?? 2000;
  const since = input.since.toISOString();
  for (let after = 0; ; ) {
    const rows = await ctx.database.rows<Row>(sql`
      (SELECT id, at, type, plan_id, actor, data, prev_hash, hash, xid::text AS xid, NULL::bigint AS purge_id, NULL::timestamptz AS purged_at, NULL::text AS reason
         FROM audit_events WHERE id > ${after} AND at >= ${since}::timestamptz ORDER BY id LIMIT ${batch})
      UNION ALL
      (SELECT p.id, p.at, NULL, p.plan_id, NULL, NULL, p.prev_hash, p.hash, p.xid::text, p.purge_id, g.at, g.reason
         FROM audit_pruned p LEFT JOIN purges g ON g.id = p.purge_id WHERE p.id > ${after} AND p.at >= ${since}::timestamptz ORDER BY p.id LIMIT ${batch})
      ORDER BY id LIMIT ${batch}`);
    for (const r of rows) {
      const common = { id: Number(r.id), at: new Date(r.at).toISOString() };
      yield r.purge_id === null
        ? {
            ...common,
            type: r.type!,
            planId: r.plan_id,
            actor: JSON.parse(r.actor!),
            data: JSON.parse(r.data!),
            prevHash: r.prev_hash,
            hash: r.hash,
            xid: r.xid,
          }
        : {
            ...common,
            planId: r.plan_id!,
            prevHash: r.prev_hash,
            hash: r.hash,
            xid: r.xid!,
            pruned: { purge: Number(r.purge_id), at: r.purged_at === null ? null : new Date(r.purged_at).toISOString(), reason: r.reason },
          };
    }
    if (rows.length < batch) return;
    after = Number(rows.at(-1)!.id);
  }
}
