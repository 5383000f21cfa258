import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Queryable, Tx } from "../../store/db.ts";
import { GENESIS_HASH } from "../records/audit.ts";
import type { ServiceContext } from "../context.ts";

/** One sealer at a time across replicas; the others skip their turn. */
export const SEALER_LOCK = 7_280_231_003;
/** The most events one seal covers, so a backlog (a sealer that was down) is sealed in bounded steps. */
export const MAX_EVENTS_PER_SEAL = 20_000;

/** A seal as stored (xids as decimal strings: they are 64-bit). */
export interface Seal {
  seq: number;
  prevHash: string;
  xidFrom: string;
  xidTo: string;
  events: number;
  eventsTotal: number;
  hash: string;
  sealedAt: Date;
}

/**
 * A seal's hash: SHA-256 of this text, each line ending in "\n":
 *   countersign audit seal v1
 *   seq <seq>
 *   prev <previous seal's hash, or GENESIS_HASH for seal 1>
 *   xids <xidFrom> <xidTo>
 *   <event id> <event hash>        (one line per covered event, in id order)
 * Seal n covers every event whose transaction id is in [xidFrom, xidTo); seals are numbered from 1,
 * and the first covers transactions from 0.
 */
export function sealHash(seal: { seq: number; prevHash: string; xidFrom: string; xidTo: string }, events: Iterable<{ id: number; hash: string }>): string {
  const h = createHash("sha256").update(`countersign audit seal v1\nseq ${seal.seq}\nprev ${seal.prevHash}\nxids ${seal.xidFrom} ${seal.xidTo}\n`, "utf8");
  for (const e of events) h.update(`${e.id} ${e.hash}\n`, "utf8");
  return "sha256:" + h.digest("hex");
}

/**
 * The lines of a seal's range that a retention purge pruned (audit_pruned): the
 * (id, hash) the seal was computed over, kept when the event itself was deleted.
 */
export async function prunedLines(ctx: Pick<ServiceContext, "database">, seal: Pick<Seal, "xidFrom" | "xidTo">): Promise<{ id: number; hash: string }[]> {
  const rows = await ctx.database.rows<{ id: number | string; hash: string }>(sql`
    SELECT id, hash FROM audit_pruned WHERE xid >= ${seal.xidFrom}::xid8 AND xid < ${seal.xidTo}::xid8 ORDER BY id`);
  return rows.map((r) => ({ id: Number(r.id), hash: r.hash }));
}

/** Two id-ordered lists of seal lines as one, in id order (the order a seal hashes them in). */
export function mergeLines<T extends { id: number }>(a: readonly T[], b: readonly T[]): T[] {
  if (b.length === 0) return [...a];
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) out.push(j >= b.length || (i < a.length && a[i]!.id <= b[j]!.id) ? a[i++]! : b[j++]!);
  return out;
}

interface SealRow {
  seq: number | string;
  prev_hash: string;
  xid_from: string;
  xid_to: string;
  events: number | string;
  events_total: number | string;
  hash: string;
  sealed_at: Date | string;
}

export const sealFromRow = (r: SealRow): Seal => ({
  seq: Number(r.seq),
  prevHash: r.prev_hash,
  xidFrom: r.xid_from,
  xidTo: r.xid_to,
  events: Number(r.events),
  eventsTotal: Number(r.events_total),
  hash: r.hash,
  sealedAt: new Date(r.sealed_at),
});

export const SEAL_COLUMNS = sql`seq, prev_hash, xid_from::text AS xid_from, xid_to::text AS xid_to, events, events_total, hash, sealed_at`;

/** The newest seal, if any. */
export async function latestSeal(ctx: Pick<ServiceContext, "database">, on?: Queryable): Promise<Seal | undefined> {
  const [row] = await ctx.database.rows<SealRow>(sql`SELECT ${SEAL_COLUMNS} FROM audit_seals ORDER BY seq DESC LIMIT 1`, on);
  return row && sealFromRow(row);
}

/**
 * Seals every audit event committed since the last seal: the background step that gives the
 * whole log one head without making appends wait for each other. Events are told apart by the
 * id of the transaction that wrote them, not by their own id: ids are handed out before commit,
 * so a smaller id can commit after a larger one has been sealed. Every transaction older than
 * the snapshot's xmin has committed or rolled back, so the events below it are final; later
 * ones are left for the next seal. One replica seals at a time (a try-lock; the others return at
 * once). Returns the seals written (none when nothing new has committed).
 */
export async function sealAudit(ctx: Pick<ServiceContext, "database" | "clock">): Promise<Seal[]> {
  const written: Seal[] = [];
  for (;;) {
    const step = await ctx.database.db.transaction((tx) => sealOnce(ctx, tx));
    if (step?.seal) written.push(step.seal);
    // A seal cut short by the limit leaves more below the boundary: go on at once.
    if (!step?.more) return written;
  }
}

async function sealOnce(ctx: Pick<ServiceContext, "database" | "clock">, tx: Tx): Promise<{ seal?: Seal; more: boolean } | undefined> {
  const { database } = ctx;
  const [lock] = await database.rows<{ got: boolean }>(sql`SELECT pg_try_advisory_xact_lock(${SEALER_LOCK}) AS got`, tx);
  if (!lock?.got) return undefined;
  // Read after the lock, in a statement of its own: its snapshot sees the last sealer's commit.
  // The boundary is taken before this transaction writes, so it has no xid to hold it back.
  const [state] = await database.rows<{ boundary: string } & Partial<SealRow>>(
    sql`
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS boundary, last.*
      FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT ${SEAL_COLUMNS} FROM audit_seals ORDER BY seq DESC LIMIT 1) AS last ON true`,
    tx,
  );
  const last = state?.seq === undefined || state.seq === null ? undefined : sealFromRow(state as SealRow);
  const from = last?.xidTo ?? "0";
  let to = state!.boundary;
  if (BigInt(to) <= BigInt(from)) return undefined;
  // Bound the seal: stop at the xid of the first event past the limit (all of one transaction's
  // events stay in one seal, so a transaction larger than the limit is sealed whole).
  const [cut] = await database.rows<{ xid: string }>(
    sql`
    SELECT xid::text AS xid FROM audit_events WHERE xid >= ${from}::xid8 AND xid < ${to}::xid8 ORDER BY xid OFFSET ${MAX_EVENTS_PER_SEAL} LIMIT 1`,
    tx,
  );
  if (cut) to = BigInt(cut.xid) > BigInt(from) ? cut.xid : (BigInt(cut.xid) + 1n).toString();
  const events = (
    await database.rows<{ id: number | string; hash: string }>(
      sql`
    SELECT id, hash FROM audit_events WHERE xid >= ${from}::xid8 AND xid < ${to}::xid8 ORDER BY id`,
      tx,
    )
  ).map((e) => ({ id: Number(e.id), hash: e.hash }));
  if (events.length === 0) return { more: false };
  const head = { seq: (last?.seq ?? 0) + 1, prevHash: last?.hash ?? GENESIS_HASH, xidFrom: from, xidTo: to };
  const seal: Seal = {
    ...head,
    events: events.length,
    eventsTotal: (last?.eventsTotal ?? 0) + events.length,
    hash: sealHash(head, events),
    sealedAt: ctx.clock(),
  };
  await tx.execute(sql`
    INSERT INTO audit_seals (seq, prev_hash, xid_from, xid_to, events, events_total, hash, sealed_at)
    VALUES (${seal.seq}, ${seal.prevHash}, ${seal.xidFrom}::xid8, ${seal.xidTo}::xid8, ${seal.events}, ${seal.eventsTotal}, ${seal.hash}, ${seal.sealedAt.toISOString()}::timestamptz)`);
  return { seal, more: cut !== undefined };
}
