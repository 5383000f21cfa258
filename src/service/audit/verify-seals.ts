import type { KeyObject } from "node:crypto";
import { sql } from "drizzle-orm";
import { z } from "zod";
import { auditChainHash, auditContentDigest, GENESIS_HASH, type AuditInput } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { mergeLines, prunedLines, SEAL_COLUMNS, sealFromRow, sealHash, type Seal } from "./seal-audit.ts";
import { signatureHolds, type PublishedSeal } from "./seal-signature.ts";

const Sha256 = z.string().regex(/^sha256:[0-9a-f]{64}$/, "must be sha256: and 64 hex digits");
const PublishedLine = z.object({
  type: z.literal("countersign.audit_seal"),
  seq: z.int().min(1),
  hash: Sha256,
  xidTo: z.string().regex(/^\d+$/, "must be a transaction id in decimal"),
  sealedAt: z.iso.datetime(),
  eventsTotal: z.int().min(0),
  kid: z.string().min(1),
  signature: z.string().regex(/^[A-Za-z0-9_-]+$/, "must be base64url"),
});

/** A published seal and the line of the seals file it was read from. */
export interface PublishedEntry {
  seal: PublishedSeal;
  line: number;
}

/** Reads a seals file (one JSON object a line, as the file sink writes it); a line that is not a published seal is an error naming it. */
export function parseSealsFile(text: string, name = "the seals file"): PublishedEntry[] {
  const entries: PublishedEntry[] = [];
  text.split("\n").forEach((raw, i) => {
    if (raw.trim() === "") return;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new ServiceError("invalid_request", `${name}, line ${i + 1}: not JSON; each line must be one published seal as Countersign writes it`);
    }
    const parsed = PublishedLine.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ServiceError("invalid_request", `${name}, line ${i + 1}: not a published seal (${issue.path.join(".") || "the line"} ${issue.message})`);
    }
    entries.push({ seal: parsed.data as PublishedSeal, line: i + 1 });
  });
  if (entries.length === 0) throw new ServiceError("invalid_request", `${name} holds no published seal`);
  return entries;
}

export interface SealsVerdict {
  ok: boolean;
  /** Published seals checked (a repeated identical line counts once). */
  checked: number;
  /** The newest published seal, which vouches for every event up to it. */
  newest?: { seq: number; hash: string; eventsTotal: number };
  /** The first published seal, in seq order, that the database contradicts, and how. */
  contradiction?: { seq: number; line: number; kind: "signature" | "conflict" | "missing" | "replaced" | "rewritten"; message: string };
}

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
const inputOf = (e: EventRow): AuditInput => ({
  planId: e.plan_id,
  type: e.type,
  actor: JSON.parse(e.actor) as Actor,
  data: JSON.parse(e.data) as Record<string, unknown>,
  at: new Date(e.at),
});
const short = (hash: string) => hash.slice(0, 19) + "…";

/**
 * Checks the database against seals published outside it. Each published seal must carry a
 * signature of one of the trusted keys, be the database's seal of that seq (same hash, boundary,
 * time and count), and be what the events recompute to: every seal from 1 is rebuilt from the
 * events' content (each event's hash recomputed from what it says, each seal from the rebuilt
 * one before it), so an attacker who edits an event and re-hashes and re-seals everything after
 * it, or deletes the newest events and seals, still contradicts what was published before.
 * Events a retention purge pruned count by the (id, hash) its checkpoint kept, since their content
 * is gone: a checkpoint forged after the seal was published contradicts it just the same. A whole
 * sealed chain moved into the checkpoint by hand keeps those (id, hash) lines and contradicts no
 * seal; whether the checkpoint is what purges wrote (plan gone, purge recorded, counts) is
 * verifyAudit's check, which `audit verify --seals` runs beside this one and fails on too.
 * Stops at the first contradiction, in seq order.
 */
export async function verifySeals(
  ctx: Pick<ServiceContext, "database">,
  entries: readonly PublishedEntry[],
  keys: readonly KeyObject[],
): Promise<SealsVerdict> {
  const { database } = ctx;
  const bySeq = new Map<number, PublishedEntry>();
  const ordered = [...entries].sort((a, b) => a.seal.seq - b.seal.seq || a.line - b.line);
  for (const entry of ordered) {
    const fail = (kind: NonNullable<SealsVerdict["contradiction"]>["kind"], message: string): SealsVerdict => ({
      ok: false,
      checked: bySeq.size,
      contradiction: { seq: entry.seal.seq, line: entry.line, kind, message },
    });
    const seen = bySeq.get(entry.seal.seq);
    if (seen) {
      if (JSON.stringify(seen.seal) !== JSON.stringify(entry.seal))
        return fail(
          "conflict",
          `published seal ${entry.seal.seq} appears twice with different contents (lines ${seen.line} and ${entry.line}): the seals file was tampered with`,
        );
      continue;
    }
    if (!signatureHolds(entry.seal, keys))
      return fail(
        "signature",
        `published seal ${entry.seal.seq} (line ${entry.line}): its signature does not verify with the given public key (signed by key ${entry.seal.kid}): the line was altered or signed by another key`,
      );
    bySeq.set(entry.seal.seq, entry);
  }

  let lastSeq = 0;
  for (const seq of bySeq.keys()) lastSeq = Math.max(lastSeq, seq); // a year of signatures is too many arguments for Math.max(...)
  const seals = (await database.rows<Parameters<typeof sealFromRow>[0]>(sql`SELECT ${SEAL_COLUMNS} FROM audit_seals WHERE seq <= ${lastSeq} ORDER BY seq`)).map(
    sealFromRow,
  );
  const stored = new Map(seals.map((s) => [s.seq, s]));
  const newestStored = (await database.rows<{ seq: number | string | null }>(sql`SELECT max(seq) AS seq FROM audit_seals`))[0]?.seq;

  let rebuiltPrev = GENESIS_HASH;
  let rebuiltTotal = 0;
  for (let seq = 1; seq <= lastSeq; seq++) {
    const seal = stored.get(seq);
    const entry = bySeq.get(seq);
    const fail = (kind: NonNullable<SealsVerdict["contradiction"]>["kind"], message: string): SealsVerdict => ({
      ok: false,
      checked: [...bySeq.keys()].filter((s) => s < seq).length,
      contradiction: { seq, line: entry!.line, kind, message: `published seal ${seq} (line ${entry!.line}): ${message}` },
    });
    if (!seal) {
      // Seals missing below a published one make it unverifiable: the first published seal at or after the gap is the one contradicted.
      const next = [...bySeq.keys()].find((s) => s >= seq)!;
      const e = bySeq.get(next)!;
      const newest = newestStored === null || newestStored === undefined ? "it has none" : `its newest is seal ${newestStored}`;
      return {
        ok: false,
        checked: [...bySeq.keys()].filter((s) => s < next).length,
        contradiction: {
          seq: next,
          line: e.line,
          kind: "missing",
          message: `published seal ${next} (line ${e.line}, ${e.seal.eventsTotal} events, ${short(e.seal.hash)}) is gone: the database has no seal ${seq} (${newest}): the log was cut back after it was published`,
        },
      };
    }
    const covered = await rebuiltEvents(ctx, seal);
    rebuiltTotal += covered.length;
    const rebuilt = sealHash({ seq, prevHash: rebuiltPrev, xidFrom: seal.xidFrom, xidTo: seal.xidTo }, covered);
    rebuiltPrev = rebuilt;
    if (!entry) continue;
    const p = entry.seal;
    if (seal.hash !== p.hash || seal.xidTo !== p.xidTo || seal.eventsTotal !== p.eventsTotal || seal.sealedAt.toISOString() !== p.sealedAt) {
      return fail(
        "replaced",
        `the database's seal ${seq} is not the one published (database: ${short(seal.hash)}, ${seal.eventsTotal} events; published: ${short(p.hash)}, ${p.eventsTotal} events): the seals were rewritten after it was published`,
      );
    }
    if (rebuilt !== p.hash || rebuiltTotal !== p.eventsTotal) {
      return fail(
        "rewritten",
        `the events it covers no longer hash to it (recomputed from their content and the purges' checkpoint: ${short(rebuilt)}, ${rebuiltTotal} events; published: ${short(p.hash)}, ${p.eventsTotal} events): events up to it were edited, deleted or added, and the chain re-hashed, or the checkpoint of pruned events was altered`,
      );
    }
  }
  const newest = bySeq.get(lastSeq)!.seal;
  return { ok: true, checked: bySeq.size, newest: { seq: newest.seq, hash: newest.hash, eventsTotal: newest.eventsTotal } };
}

/** The (id, hash) lines of a seal with each remaining event's hash recomputed from its content, not read back; pruned events' as their checkpoint holds them. */
async function rebuiltEvents(ctx: Pick<ServiceContext, "database">, seal: Seal): Promise<{ id: number; hash: string }[]> {
  const rows = await ctx.database.rows<EventRow>(sql`
    SELECT id, plan_id, type, actor, data, at, prev_hash, hash FROM audit_events WHERE xid >= ${seal.xidFrom}::xid8 AND xid < ${seal.xidTo}::xid8 ORDER BY id`);
  return mergeLines(
    rows.map((e) => ({ id: Number(e.id), hash: auditChainHash(e.prev_hash, auditContentDigest(inputOf(e))) })),
    await prunedLines(ctx, seal),
  );
}

/** What `audit verify --seals` prints about the published seals. */
export function sealsVerdictLines(v: SealsVerdict): string[] {
  if (v.ok)
    return [
      `Published seals: ${v.checked} checked; the newest, seal ${v.newest!.seq} (${v.newest!.hash}, ${v.newest!.eventsTotal} events), is signed and matches the database's seal and the events it covers.`,
    ];
  return [
    `Audit log CONTRADICTS published seal ${v.contradiction!.seq} (${v.contradiction!.kind}): ${v.contradiction!.message}`,
    `(${v.checked} published seal(s) before it checked out)`,
  ];
}
