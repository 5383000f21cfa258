import { sql, type SQL } from "drizzle-orm";
import type { ServiceContext } from "../context.ts";
import { rollUpMetrics } from "./metrics.ts";
import { sealAudit } from "../audit/seal-audit.ts";
import { signSeals, type SealSigning } from "../audit/sign-seals.ts";

export interface RetentionPolicy {
  /** Delivered outbox rows, and with `plans` final plans, older than this are deleted. */
  days: number;
  /** Opt-in: final plans last changed `days` ago go, with their decisions, outbox rows and audit events (behind a checkpoint). */
  plans: boolean;
}

export const DEFAULT_RETENTION: RetentionPolicy = { days: 90, plans: false };

/** Ended sessions and used links are kept a day, so a second click on a used link still says "already used". */
const GRACE_SECONDS = 86_400;

export interface RetentionSwept {
  outbox: number;
  sessions: number;
  loginLinks: number;
  plans: number;
}

/**
 * One pass of the retention sweep: each kind of row is deleted in batches of `batch`,
 * each batch its own short transaction, at most `maxBatches` per kind and pass, so a first pass
 * over years of history never holds locks for long; the next pass carries on. Business time from
 * ctx.clock. Plans leave only through countersign_purge_plans(), the one path the append-only
 * guards allow, which never takes an open plan, records each call in `purges`, and deletes a
 * plan's audit events only behind a checkpoint (audit_pruned) and only once every one of them is
 * sealed and counted by the metrics rollup (and, when seals are signed, signed): so the sweep
 * seals and rolls up first, and a plan whose events are not there yet waits for a later pass.
 */
export async function sweepRetention(
  ctx: Pick<ServiceContext, "database" | "clock" | "logger">,
  input: { policy?: RetentionPolicy; batch?: number; maxBatches?: number; signing?: SealSigning } = {},
): Promise<RetentionSwept> {
  const policy = input.policy ?? DEFAULT_RETENTION;
  const batch = input.batch ?? 500;
  const maxBatches = input.maxBatches ?? 20;
  const now = ctx.clock();
  const cutoff = new Date(now.getTime() - policy.days * 86_400_000).toISOString();
  const graceCutoff = new Date(now.getTime() - GRACE_SECONDS * 1000).toISOString();

  const repeat = async (deleteBatch: () => Promise<number>): Promise<number> => {
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await deleteBatch();
      total += n;
      if (n < batch) break;
    }
    return total;
  };
  const deleted = async (statement: SQL) =>
    Number((await ctx.database.rows<{ n: number | string }>(sql`WITH gone AS (${statement} RETURNING 1) SELECT count(*) AS n FROM gone`))[0]?.n ?? 0);

  const swept: RetentionSwept = {
    // Delivered rows only: dead letters stay until someone retries them (the plan page lists them).
    outbox: await repeat(() =>
      deleted(sql`
      DELETE FROM outbox WHERE id IN (
        SELECT id FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ${cutoff}::timestamptz ORDER BY delivered_at LIMIT ${batch})`),
    ),
    sessions: await repeat(() =>
      deleted(sql`
      DELETE FROM web_sessions WHERE id_hash IN (
        SELECT id_hash FROM web_sessions WHERE expires_at < ${graceCutoff}::timestamptz OR ended_at < ${graceCutoff}::timestamptz LIMIT ${batch})`),
    ),
    loginLinks: await repeat(() =>
      deleted(sql`
      DELETE FROM login_links WHERE token_hash IN (
        SELECT token_hash FROM login_links WHERE expires_at < ${graceCutoff}::timestamptz OR used_at < ${graceCutoff}::timestamptz LIMIT ${batch})`),
    ),
    plans: policy.plans ? await purgePlans(ctx, input.signing, () => repeat(() => purgeBatch(ctx, cutoff, batch, policy.days))) : 0,
  };
  if (swept.outbox + swept.sessions + swept.loginLinks + swept.plans > 0) ctx.logger.info({ ...swept, days: policy.days }, "retention sweep deleted old rows");
  return swept;
}

/**
 * Seals what has committed, signs the newest seal when one is due (with a seal key: the first
 * signature is due at once, so no event is pruned before any seal was signed), and rolls the seals
 * up into the metrics; then purges, which prunes only events all of that covers.
 */
async function purgePlans(ctx: Pick<ServiceContext, "database" | "clock">, signing: SealSigning | undefined, purge: () => Promise<number>): Promise<number> {
  await sealAudit(ctx);
  if (signing) await signSeals(ctx, signing);
  await rollUpMetrics(ctx, { maxSteps: 20 });
  return purge();
}

/**
 * One call of countersign_purge_plans() taking about `batch` final plans: its cutoff is moved back
 * to just after the batch's newest (plans_final_updated_at walks them oldest first), and never past
 * the database's own now(), which the function requires. Nothing to purge: no call, no record.
 */
async function purgeBatch(ctx: Pick<ServiceContext, "database">, cutoff: string, batch: number, days: number): Promise<number> {
  const [row] = await ctx.database.rows<{ purged: number | string | null }>(sql`
    WITH final AS (
      SELECT updated_at FROM plans
      WHERE status NOT IN ('pending', 'approved', 'executing') AND updated_at < least(${cutoff}::timestamptz, now())
      ORDER BY updated_at LIMIT ${batch}),
    edge AS (SELECT max(updated_at) + interval '1 microsecond' AS before FROM final HAVING count(*) > 0)
    SELECT countersign_purge_plans(least(edge.before, ${cutoff}::timestamptz, now()), ${`retention: final plans older than ${days} days`}) AS purged FROM edge`);
  return Number(row?.purged ?? 0);
}
