import type { Actor } from "../../contract/agent-api.ts";
import { createHash } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import { fingerprint } from "../../plan/fingerprint.ts";
import type { Tx } from "../../store/db.ts";

/** Who caused an event: an agent through the API, a person through Slack or the web, or Countersign itself. */

/**
 * The audit log is many short hash chains instead of one long one (docs/design.md, "Audit log"):
 * - each plan's events form the plan's own chain, serialized by the plan's row lock, which every
 *   writer of a plan event already holds (the transition's UPDATE, decide's and the reminders'
 *   FOR UPDATE, submit's INSERT), so plans never wait for each other;
 * - events with no plan (agents, sign-in links, sessions) form the system chain, serialized by
 *   an advisory lock: they are rare;
 * - audit_seals (seal-audit.ts) ties them together: each seal covers every event committed since
 *   the previous seal, and its hash covers the previous seal's, so the newest seal is the one
 *   head that covers the whole log. The first seal links back to GENESIS_HASH.
 */
export const GENESIS_HASH = "sha256:" + "0".repeat(64);
/** Serializes appends to the system chain. Taken last in its transaction, so it cannot deadlock with row locks. */
const SYSTEM_CHAIN_LOCK = 7_280_231_002;

export interface AuditInput {
  planId: string | null;
  type: string;
  actor: Actor;
  data: Record<string, unknown>;
  at: Date;
}

const sha256 = (text: string) => "sha256:" + createHash("sha256").update(text, "utf8").digest("hex");

/** Where a plan's chain starts: derived from its id, so an event cannot be moved to another plan's chain. */
export function planGenesis(planId: string): string {
  return sha256(`countersign audit plan ${planId}`);
}

/** Where the system chain (events with no plan) starts. */
export const SYSTEM_GENESIS = sha256("countersign audit system");

/** The genesis of the chain an event belongs to. */
export const chainGenesis = (planId: string | null): string => (planId === null ? SYSTEM_GENESIS : planGenesis(planId));

/** What an event says, without its place in a chain: RFC 8785 JSON of its columns, hashed. */
export function auditContentDigest(e: AuditInput): string {
  return fingerprint({ planId: e.planId, type: e.type, actor: e.actor, data: e.data, at: e.at.toISOString() });
}

/**
 * An event's hash: sha256 of its predecessor's hash followed by its content digest (both
 * "sha256:" + 64 hex, so the concatenation is unambiguous). Kept this simple so that the
 * database computes it in the same statement that reads the predecessor (chainHashSql), and an
 * outside verifier needs nothing but SHA-256 and RFC 8785.
 */
export function auditChainHash(prevHash: string, contentDigest: string): string {
  return sha256(prevHash + contentDigest);
}

/** auditChainHash, in SQL. */
const chainHashSql = (prev: SQL, content: string) => sql`'sha256:' || encode(sha256(convert_to(${prev} || ${content}::text, 'UTF8')), 'hex')`;

/**
 * The one statement that appends an event to its chain: reads the chain's tail and computes the
 * new hash in the database, so an append is one round trip. The tail is read by a statement of
 * its own, after the caller took the chain's lock (the plan's row lock, or the system chain's
 * lock): a tail read by the very statement that waits for the lock would be read from a snapshot
 * taken before the previous holder committed, and fork the chain. A fork cannot go unnoticed
 * anyway: two events with one predecessor break audit_events_one_successor.
 */
export function auditInsert(e: AuditInput): SQL {
  const tail = e.planId === null ? sql`SELECT hash FROM audit_events WHERE plan_id IS NULL ORDER BY id DESC LIMIT 1` : planChainTail(e.planId);
  const content = auditContentDigest(e);
  return sql`INSERT INTO audit_events (plan_id, type, actor, data, at, prev_hash, hash)
    SELECT ${e.planId}::uuid, ${e.type}, ${JSON.stringify(e.actor)}, ${JSON.stringify(e.data)}, ${e.at.toISOString()}::timestamptz, tail.prev, ${chainHashSql(sql`tail.prev`, content)}
      FROM (SELECT coalesce((${tail}), ${chainGenesis(e.planId)}::text) AS prev) AS tail`;
}

/**
 * A plan chain's newest hash (no row: the chain is empty, and starts at planGenesis), read once
 * the plan's row lock is held (see auditInsert).
 */
function planChainTail(planId: string): SQL {
  return sql`SELECT hash FROM audit_events WHERE plan_id = ${planId}::uuid ORDER BY id DESC LIMIT 1`;
}

/**
 * Appends one event, inside the caller's transaction. A plan event must be written while the
 * transaction holds the plan's row lock (every plan writer does; see above); one with no plan
 * takes the system chain's lock here.
 */
export async function appendAudit(tx: Tx, event: AuditInput): Promise<void> {
  if (event.planId === null) await tx.execute(sql`SELECT pg_advisory_xact_lock(${SYSTEM_CHAIN_LOCK})`);
  await tx.execute(auditInsert(event));
}
