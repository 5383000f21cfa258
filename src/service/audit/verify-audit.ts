import { sql } from "drizzle-orm";
import { auditChainHash, auditContentDigest, chainGenesis, GENESIS_HASH, type AuditInput } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { mergeLines, prunedLines, SEAL_COLUMNS, sealFromRow, sealHash, type Seal } from "./seal-audit.ts";

/** Where a break is: the system chain, a plan's chain, the checkpoint of pruned plans' chains, or the seals. */
export type AuditChain = "system" | "plan" | "pruned" | "seals";

export interface AuditProblem {
  chain: AuditChain;
  /** What happened there, as far as the hashes tell. */
  kind: "edited" | "deleted" | "reordered" | "moved" | "added";
  planId?: string;
  eventId?: number;
  seal?: number;
  /** The purge (a `purges` id) a checkpoint line names. */
  purge?: number;
  message: string;
}

export interface AuditVerdict {
  ok: boolean;
  /** Events checked, in every chain. */
  events: number;
  /** Events covered by a seal, and those committed since the newest seal: not errors, just not yet sealed. */
  sealed: number;
  unsealed: number;
  /** Of the sealed events, those a retention purge deleted: checked through the checkpoint it left (their ids and hashes), not their content. */
  pruned: number;
  /** The newest seal: the one head that covers the whole sealed log (what a signer signs). */
  head?: { seq: number; hash: string; xidTo: string; sealedAt: string };
  /** The first break found (chains are checked before seals, as they name the event), and how many were found in all. */
  problem?: AuditProblem;
  problems: AuditProblem[];
}

/** Stop collecting after this many problems: one is enough to fail, a few help to see the extent. */
const MAX_PROBLEMS = 20;

interface EventRow {
  id: number | string;
  plan_id: string | null;
  type: string;
  actor: string;
  data: string;
  at: Date | string;
  prev_hash: string;
  hash: string;
}
const EVENT_COLUMNS = sql`id, plan_id, type, actor, data, at, prev_hash, hash`;
const inputOf = (e: EventRow): AuditInput => ({
  planId: e.plan_id,
  type: e.type,
  actor: JSON.parse(e.actor) as Actor,
  data: JSON.parse(e.data) as Record<string, unknown>,
  at: new Date(e.at),
});

/**
 * Recomputes the whole audit log: the system chain and every plan's chain link by link, then
 * every seal against the events it covers. An edited event
 * breaks its own hash; a deleted one breaks its successor's link (a deleted chain tail, or a
 * plan's events deleted whole, no longer match their seal); a reordered one links to an event
 * that comes after it. Events committed since the newest seal are counted, not judged: only their
 * chain protects them until the next seal. Plans a retention purge took left a checkpoint line per
 * event (audit_pruned): each pruned chain must still link from its genesis, and every seal is
 * recomputed over the events that remain plus those lines, so an event deleted any other way, or a
 * checkpoint line altered, still breaks its seal. The seals see only (id, hash), so the lines must
 * also be what a purge writes (checkpointAccounts): whole chains of plans that are gone, under a
 * recorded purge, as many as it counted.
 */
export async function verifyAudit(ctx: Pick<ServiceContext, "database">, input: { batch?: number } = {}): Promise<AuditVerdict> {
  const { database } = ctx;
  const batch = input.batch ?? 2000;
  const problems: AuditProblem[] = [];
  const full = () => problems.length >= MAX_PROBLEMS;
  let events = 0;

  /** Where the event a broken link points at is: later in the same chain (reordered), in another chain (moved), or gone (deleted). */
  async function whyLinkBroken(e: EventRow, expected: string): Promise<Pick<AuditProblem, "kind" | "message">> {
    const [target] = await database.rows<{ id: number | string; plan_id: string | null }>(
      sql`SELECT id, plan_id FROM audit_events WHERE hash = ${e.prev_hash} LIMIT 1`,
    );
    if (!target) {
      const [pruned] = await database.rows<{ id: number | string; purge_id: number | string }>(
        sql`SELECT id, purge_id FROM audit_pruned WHERE hash = ${e.prev_hash} LIMIT 1`,
      );
      if (pruned)
        return {
          kind: "deleted",
          message: `event ${e.id} (${e.type}) links to event ${pruned.id}, which purge ${pruned.purge_id} pruned: a purge takes a plan's whole chain, so events of a chain that lives on were deleted`,
        };
    }
    if (target && target.plan_id === e.plan_id && Number(target.id) > Number(e.id)) {
      return { kind: "reordered", message: `event ${e.id} (${e.type}) links to event ${target.id}, which comes after it: events were reordered` };
    }
    if (target && target.plan_id !== e.plan_id) {
      return {
        kind: "moved",
        message: `event ${e.id} (${e.type}) links to event ${target.id} of ${target.plan_id ? `plan ${target.plan_id}` : "the system chain"}: an event was moved between chains`,
      };
    }
    const before = expected === chainGenesis(e.plan_id) ? "the start of its chain" : `the event before it, which hashes to ${expected.slice(0, 19)}…`;
    return {
      kind: "deleted",
      message: `event ${e.id} (${e.type}) links to ${e.prev_hash.slice(0, 19)}…, not to ${before}: an event before it was deleted (or its link was changed)`,
    };
  }

  /** Checks one event of a split chain; returns the hash the next one must link to. */
  async function checkLink(e: EventRow, chain: "system" | "plan", expected: string): Promise<string> {
    events++;
    const at = { chain, eventId: Number(e.id), ...(e.plan_id ? { planId: e.plan_id } : {}) };
    if (e.hash !== auditChainHash(e.prev_hash, auditContentDigest(inputOf(e)))) {
      problems.push({ ...at, kind: "edited", message: `event ${e.id} (${e.type}) does not match its hash: it was edited after it was written` });
    } else if (e.prev_hash !== expected) {
      problems.push({ ...at, ...(await whyLinkBroken(e, expected)) });
    }
    return e.hash;
  }

  // The system chain, then every plan's chain, each from its own genesis.
  let expected = chainGenesis(null);
  for (let lastId = 0; !full(); ) {
    const rows = await database.rows<EventRow>(
      sql`SELECT ${EVENT_COLUMNS} FROM audit_events WHERE plan_id IS NULL AND id > ${lastId} ORDER BY id LIMIT ${batch}`,
    );
    for (const e of rows) {
      expected = await checkLink(e, "system", expected);
      lastId = Number(e.id);
    }
    if (rows.length < batch) break;
  }
  let plan: string | undefined;
  for (let after: { planId: string; id: number } | undefined; !full(); ) {
    const rows = await database.rows<EventRow>(sql`
      SELECT ${EVENT_COLUMNS} FROM audit_events
       WHERE plan_id IS NOT NULL ${after ? sql`AND (plan_id, id) > (${after.planId}::uuid, ${after.id})` : sql``}
       ORDER BY plan_id, id LIMIT ${batch}`);
    for (const e of rows) {
      if (e.plan_id !== plan) {
        plan = e.plan_id!;
        expected = chainGenesis(plan);
      }
      expected = await checkLink(e, "plan", expected);
      after = { planId: plan, id: Number(e.id) };
    }
    if (rows.length < batch) break;
  }

  // The checkpoint of pruned plans (whole chains): each still links from its
  // genesis, so a line altered or dropped shows even where no seal covers it yet.
  let pruned = 0;
  for (let after: { planId: string; id: number } | undefined, plan: string | undefined, expected = ""; !full(); ) {
    const rows = await database.rows<{ id: number | string; plan_id: string; prev_hash: string; hash: string }>(sql`
      SELECT id, plan_id, prev_hash, hash FROM audit_pruned
       ${after ? sql`WHERE (plan_id, id) > (${after.planId}::uuid, ${after.id})` : sql``}
       ORDER BY plan_id, id LIMIT ${batch}`);
    for (const p of rows) {
      pruned++;
      if (p.plan_id !== plan) {
        plan = p.plan_id;
        expected = chainGenesis(plan);
      }
      if (p.prev_hash !== expected) {
        problems.push({
          chain: "pruned",
          kind: "edited",
          planId: plan,
          eventId: Number(p.id),
          message: `the checkpoint line of pruned event ${p.id} links to ${p.prev_hash.slice(0, 19)}…, not to ${expected === chainGenesis(plan) ? "the start of its chain" : `the line before it (${expected.slice(0, 19)}…)`}: the checkpoint was altered`,
        });
      }
      expected = p.hash;
      after = { planId: plan, id: Number(p.id) };
    }
    if (rows.length < batch) break;
  }

  if (!full()) problems.push(...(await checkpointAccounts(ctx, MAX_PROBLEMS - problems.length)));

  // The seals, each against the events it covers; the first starts at xid 0 and links to GENESIS_HASH.
  const seals = (await database.rows<Parameters<typeof sealFromRow>[0]>(sql`SELECT ${SEAL_COLUMNS} FROM audit_seals ORDER BY seq`)).map(sealFromRow);
  let previous: Seal | undefined;
  for (const seal of seals) {
    if (full()) break;
    const problem = (kind: AuditProblem["kind"], message: string) =>
      problems.push({ chain: "seals", kind, seal: seal.seq, message: `seal ${seal.seq}: ${message}` });
    const expectedSeq = previous ? previous.seq + 1 : 1;
    if (seal.seq !== expectedSeq)
      problem(
        "deleted",
        `${previous ? `comes after seal ${previous.seq}` : "is the first seal"}, but seal ${expectedSeq}${seal.seq - expectedSeq > 1 ? `–${seal.seq - 1}` : ""} is missing: seals were deleted`,
      );
    else if (seal.prevHash !== (previous?.hash ?? GENESIS_HASH))
      problem("edited", `links to ${seal.prevHash.slice(0, 19)}…, not to the seal before it: a seal was replaced`);
    else if (seal.xidFrom !== (previous?.xidTo ?? "0")) {
      problem(
        "edited",
        `covers transactions from ${seal.xidFrom}, but ${previous ? `seal ${previous.seq} ended at ${previous.xidTo}` : "the first seal starts at 0"}: a seal was changed`,
      );
    } else {
      // One read per seal: a seal covers at most MAX_EVENTS_PER_SEAL events (or one larger transaction).
      const remaining = (
        await database.rows<{ id: number | string; hash: string }>(sql`
        SELECT id, hash FROM audit_events WHERE xid >= ${seal.xidFrom}::xid8 AND xid < ${seal.xidTo}::xid8 ORDER BY id`)
      ).map((r) => ({ id: Number(r.id), hash: r.hash }));
      const covered = mergeLines(remaining, await prunedLines(ctx, seal));
      if (covered.length < seal.events)
        problem(
          "deleted",
          `covers ${seal.events} event(s), but ${covered.length} remain or were pruned by a purge: ${seal.events - covered.length} were deleted`,
        );
      else if (covered.length > seal.events)
        problem("added", `covers ${seal.events} event(s), but ${covered.length} are in its range: ${covered.length - seal.events} were added afterwards`);
      else if (seal.hash !== sealHash(seal, covered))
        problem("edited", `the ${seal.events} event(s) it covers no longer hash to it: an event's id or hash was changed, or the seal was`);
    }
    previous = seal;
  }

  const newest = seals.at(-1);
  // A purge prunes only sealed events: a checkpoint line past the newest seal was not written by one.
  const [unsealedPruned] = await database.rows<{ id: number | string }>(
    sql`SELECT id FROM audit_pruned WHERE xid >= ${newest?.xidTo ?? "0"}::xid8 ORDER BY id LIMIT 1`,
  );
  if (unsealedPruned && !full()) {
    problems.push({
      chain: "pruned",
      kind: "added",
      eventId: Number(unsealedPruned.id),
      message: `the checkpoint has a line for event ${unsealedPruned.id}, which no seal covers: purges prune only sealed events, so the line was added by hand`,
    });
  }
  const [pending] = await database.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM audit_events WHERE xid >= ${newest?.xidTo ?? "0"}::xid8`);
  return {
    ok: problems.length === 0,
    events,
    sealed: newest?.eventsTotal ?? 0,
    unsealed: Number(pending?.n ?? 0),
    pruned,
    ...(newest ? { head: { seq: newest.seq, hash: newest.hash, xidTo: newest.xidTo, sealedAt: newest.sealedAt.toISOString() } } : {}),
    ...(problems[0] ? { problem: problems[0] } : {}),
    problems,
  };
}

/**
 * What only a purge writes, checked against what it records: a pruned plan's row is gone, none of
 * its chain remains in the log, every
 * line names a `purges` row, and each purge's lines are as many events, of at most as many plans,
 * as it counted. A whole sealed chain moved into the checkpoint by hand matches every seal; this
 * is what names it. Each check is one statement, so a purge committing meanwhile (its lines and its
 * record in one transaction) is seen whole or not at all.
 */
async function checkpointAccounts(ctx: Pick<ServiceContext, "database">, limit: number): Promise<AuditProblem[]> {
  const { database } = ctx;
  const problems: AuditProblem[] = [];
  const livePlans = await database.rows<{ plan_id: string; purge_id: number | string; n: number | string }>(sql`
    SELECT a.plan_id, min(a.purge_id) AS purge_id, count(*) AS n FROM audit_pruned a
     WHERE EXISTS (SELECT 1 FROM plans p WHERE p.id = a.plan_id)
     GROUP BY a.plan_id ORDER BY a.plan_id LIMIT ${limit}`);
  for (const r of livePlans) {
    problems.push({
      chain: "pruned",
      kind: "deleted",
      planId: r.plan_id,
      purge: Number(r.purge_id),
      message: `plan ${r.plan_id}'s chain is in the checkpoint (${r.n} event(s), naming purge ${r.purge_id}), but the plan is still there: a purge deletes a plan with its events, so these events were deleted some other way`,
    });
  }
  const remaining = await database.rows<{ plan_id: string; first: number | string; n: number | string; purge_id: number | string }>(sql`
    SELECT e.plan_id, min(e.id) AS first, count(*) AS n, (SELECT min(a.purge_id) FROM audit_pruned a WHERE a.plan_id = e.plan_id) AS purge_id
      FROM audit_events e
     WHERE EXISTS (SELECT 1 FROM audit_pruned a WHERE a.plan_id = e.plan_id)
     GROUP BY e.plan_id ORDER BY min(e.id) LIMIT ${limit}`);
  for (const r of remaining) {
    problems.push({
      chain: "pruned",
      kind: "added",
      planId: r.plan_id,
      eventId: Number(r.first),
      purge: Number(r.purge_id),
      message: `${r.n} event(s) of plan ${r.plan_id}, from event ${r.first}, are still in the log, but purge ${r.purge_id} pruned that plan's chain: a purge takes a whole chain, so its checkpoint lines or these events were added by hand`,
    });
  }
  const purges = await database.rows<{
    purge_id: number | string;
    recorded: boolean;
    lines: number | string;
    plans: number | string;
    counted_events: number | string | null;
    counted_plans: number | string | null;
  }>(sql`
    SELECT coalesce(r.id, a.purge_id) AS purge_id, r.id IS NOT NULL AS recorded, coalesce(a.lines, 0) AS lines, coalesce(a.plans, 0) AS plans,
           r.audit_events AS counted_events, r.plans AS counted_plans
      FROM (SELECT purge_id, count(*) AS lines, count(DISTINCT plan_id) AS plans FROM audit_pruned GROUP BY purge_id) a
      FULL JOIN purges r ON r.id = a.purge_id
     WHERE r.id IS NULL OR coalesce(a.lines, 0) <> r.audit_events OR coalesce(a.plans, 0) > r.plans
     ORDER BY 1 LIMIT ${limit}`);
  for (const r of purges) {
    const at = { chain: "pruned" as const, purge: Number(r.purge_id) };
    const lines = Number(r.lines);
    const counted = Number(r.counted_events);
    if (!r.recorded) {
      problems.push({
        ...at,
        kind: "added",
        message: `${lines} checkpoint line(s) of ${r.plans} plan(s) name purge ${r.purge_id}, which purges does not record: a purge records itself in the transaction that writes its lines, so no purge wrote these`,
      });
    } else if (lines > counted) {
      problems.push({
        ...at,
        kind: "added",
        message: `purge ${r.purge_id} recorded ${counted} pruned event(s), but ${lines} checkpoint lines name it: ${lines - counted} were added by hand`,
      });
    } else if (lines < counted) {
      problems.push({
        ...at,
        kind: "deleted",
        message: `purge ${r.purge_id} recorded ${counted} pruned event(s), but only ${lines} checkpoint lines name it: ${counted - lines} were deleted`,
      });
    } else {
      problems.push({
        ...at,
        kind: "added",
        message: `purge ${r.purge_id} took ${r.counted_plans} plan(s), but checkpoint lines of ${r.plans} plans name it: lines of other plans were added by hand`,
      });
    }
  }
  return problems.slice(0, limit);
}
