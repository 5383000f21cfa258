import { asc, gt } from "drizzle-orm";
import { auditEvents, auditHead } from "../store/schema.ts";
import { auditEventHash, GENESIS_HASH, type Actor } from "./audit.ts";
import type { ServiceContext } from "./context.ts";

export interface AuditVerdict {
  ok: boolean;
  events: number;
  /** Where the chain breaks, when it does: the event id (or "tail") and what is wrong there. */
  problem?: { at: number | "tail"; message: string };
}

/**
 * Walks the whole audit log in order, recomputing every hash from the previous one. An edited
 * row breaks its own hash; a deleted row breaks the next one's link; a deleted tail no longer
 * matches the head recorded with every append.
 */
export async function verifyAudit(ctx: Pick<ServiceContext, "database">, input: { batch?: number } = {}): Promise<AuditVerdict> {
  const { database } = ctx;
  const batch = input.batch ?? 1000;
  let prevHash = GENESIS_HASH;
  let lastId = 0;
  let count = 0;
  for (;;) {
    const rows = await database.db.select().from(auditEvents).where(gt(auditEvents.id, lastId)).orderBy(asc(auditEvents.id)).limit(batch);
    for (const e of rows) {
      count++;
      if (e.prevHash !== prevHash) {
        return { ok: false, events: count, problem: { at: e.id, message: `event ${e.id} links to ${e.prevHash.slice(0, 19)}…, but the event before it hashes to ${prevHash.slice(0, 19)}… (an event before it was deleted or changed)` } };
      }
      const expected = auditEventHash(prevHash, { planId: e.planId, type: e.type, actor: e.actor as Actor, data: e.data as Record<string, unknown>, at: e.at });
      if (e.hash !== expected) {
        return { ok: false, events: count, problem: { at: e.id, message: `event ${e.id} (${e.type}) does not match its hash: it was edited after it was written` } };
      }
      prevHash = e.hash;
      lastId = e.id;
    }
    if (rows.length < batch) break;
  }
  const [head] = await database.db.select().from(auditHead);
  if (head && (head.lastEventId !== lastId || head.hash !== prevHash)) {
    return { ok: false, events: count, problem: { at: "tail", message: `the log ends at event ${lastId || "(none)"}, but the recorded head is event ${head.lastEventId}: events at the end were deleted` } };
  }
  if (!head && count > 0) return { ok: false, events: count, problem: { at: "tail", message: "the log has events but no recorded head: the head row was deleted" } };
  return { ok: true, events: count };
}
