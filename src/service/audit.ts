import { desc, sql } from "drizzle-orm";
import { fingerprint } from "../plan/fingerprint.ts";
import { auditEvents, auditHead } from "../store/schema.ts";
import type { Tx } from "../store/db.ts";

/** Who caused an event: an agent through the API, a person through Slack or the web, or Countersign itself. */
export type Actor =
  | { type: "agent"; agentId: string; name: string }
  | { type: "user"; userId: string; via: "slack" | "web" }
  | { type: "system"; process: string };

export const GENESIS_HASH = "sha256:" + "0".repeat(64);
/** Serializes appends so that the chain has one tail. Taken last in any transaction, so it cannot deadlock with row locks. */
const AUDIT_CHAIN_LOCK = 7_280_231_002;

export interface AuditInput {
  planId: string | null;
  type: string;
  actor: Actor;
  data: Record<string, unknown>;
  at: Date;
}

/** What each event's hash covers. Exported so that `audit verify` recomputes exactly this. */
export function auditEventHash(prevHash: string, e: AuditInput): string {
  return fingerprint({ prevHash, planId: e.planId, type: e.type, actor: e.actor, data: e.data, at: e.at.toISOString() });
}

/** Appends one event to the hash-chained audit log, inside the caller's transaction. */
export async function appendAudit(tx: Tx, event: AuditInput): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK})`);
  const [last] = await tx.select({ hash: auditEvents.hash }).from(auditEvents).orderBy(desc(auditEvents.id)).limit(1);
  const prevHash = last?.hash ?? GENESIS_HASH;
  const hash = auditEventHash(prevHash, event);
  const [row] = await tx.insert(auditEvents).values({ ...event, prevHash, hash }).returning({ id: auditEvents.id });
  await tx.insert(auditHead).values({ id: 1, lastEventId: row!.id, hash }).onConflictDoUpdate({ target: auditHead.id, set: { lastEventId: row!.id, hash } });
}
