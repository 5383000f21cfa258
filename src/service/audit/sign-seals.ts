import { sql } from "drizzle-orm";
import type { AuditSealConfig } from "../../config/schema.ts";
import { auditSealSignatures, outbox } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { sinkLane } from "../records/outbox-lanes.ts";
import { SEAL_COLUMNS, SEALER_LOCK, sealFromRow, type Seal } from "./seal-audit.ts";
import { signSeal, statementOf, statementText, type PublishedSeal, type SealKey } from "./seal-signature.ts";

/** The outbox sinks that publish a signed seal outside the database; each is its own lane. */
export const SEAL_SINKS = { file: "audit_seal.file", webhook: "audit_seal.webhook", slack: "audit_seal.slack" } as const;

export interface SealSigning {
  key: SealKey;
  policy: Pick<AuditSealConfig, "everyEvents" | "everySeconds" | "file" | "webhookUrl">;
  /** slack.auditChannel, when Slack is connected. */
  slackChannel?: string | undefined;
}

/** Where a signed seal goes: one outbox row per place, so each publishes once whatever the replicas. */
export function sealSinksOf(signing: Pick<SealSigning, "policy" | "slackChannel">): string[] {
  return [
    ...(signing.policy.file ? [SEAL_SINKS.file] : []),
    ...(signing.policy.webhookUrl ? [SEAL_SINKS.webhook] : []),
    ...(signing.slackChannel ? [SEAL_SINKS.slack] : []),
  ];
}

/** Whether the newest seal is due a signature: none yet, or enough events or time since the last one. */
export function signatureDue(
  newest: Pick<Seal, "seq" | "eventsTotal">,
  last: { seq: number; eventsTotal: number; signedAt: Date } | undefined,
  policy: SealSigning["policy"],
  now: Date,
): boolean {
  if (!last) return true;
  if (newest.seq <= last.seq) return false;
  return newest.eventsTotal - last.eventsTotal >= policy.everyEvents || now.getTime() - last.signedAt.getTime() >= policy.everySeconds * 1000;
}

/**
 * Signs the newest seal when one is due, storing the signature with its publication's outbox rows
 * in one transaction. It runs right after sealing, under the sealer's lock, so one replica signs at
 * a time; the signature's primary key (the seal's seq) makes a second signing of a seal fail
 * rather than publish twice. Any seal covers every one before it, so skipping seals loses nothing.
 * Returns what was signed, if anything.
 */
export async function signSeals(ctx: Pick<ServiceContext, "database" | "clock">, signing: SealSigning): Promise<PublishedSeal | undefined> {
  const { database } = ctx;
  return database.db.transaction(async (tx) => {
    const [lock] = await database.rows<{ got: boolean }>(sql`SELECT pg_try_advisory_xact_lock(${SEALER_LOCK}) AS got`, tx);
    if (!lock?.got) return undefined;
    const [row] = await database.rows<Parameters<typeof sealFromRow>[0]>(sql`SELECT ${SEAL_COLUMNS} FROM audit_seals ORDER BY seq DESC LIMIT 1`, tx);
    if (!row) return undefined;
    const newest = sealFromRow(row);
    const [last] = await database.rows<{ seq: number | string; statement: string; signed_at: Date | string }>(
      sql`
      SELECT seq, statement, signed_at FROM audit_seal_signatures ORDER BY seq DESC LIMIT 1`,
      tx,
    );
    const now = ctx.clock();
    const lastSigned = last && {
      seq: Number(last.seq),
      eventsTotal: Number((JSON.parse(last.statement) as { eventsTotal: number }).eventsTotal),
      signedAt: new Date(last.signed_at),
    };
    if (!signatureDue(newest, lastSigned, signing.policy, now)) return undefined;
    const published = signSeal(signing.key, statementOf(newest));
    const { kid, signature, ...statement } = published;
    await tx.insert(auditSealSignatures).values({ seq: newest.seq, statement: statementText(statement), kid, signature, signedAt: now });
    const sinks = sealSinksOf(signing);
    if (sinks.length > 0)
      await tx.insert(outbox).values(sinks.map((kind) => ({ planId: null, kind, lane: sinkLane(kind).lane, payload: published, availableAt: now })));
    return published;
  });
}
