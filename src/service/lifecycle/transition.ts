import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import { TRANSITIONS, type Transition } from "../../plan/lifecycle.ts";
import { plans } from "../../store/schema.ts";
import type { Queryable, Tx } from "../../store/db.ts";
import { auditInsert } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { effectsInsert, outboxRowsOf } from "../records/outbox.ts";
import { ListeningPlanSignals } from "../records/plan-signals.ts";

export type PlanRow = typeof plans.$inferSelect;

/**
 * The one way a plan changes status: a conditional UPDATE on the status it must be in, its
 * audit event, its outbox rows and its wake-up, all in the caller's transaction. Returns the
 * updated row, or undefined when the plan was no longer in a status this transition leaves
 * (someone else got there first), in which case nothing was written.
 */
export async function transition(
  ctx: Pick<ServiceContext, "clock" | "sinks" | "config">,
  tx: Tx,
  input: {
    transition: Transition;
    actor: Actor;
    data?: Record<string, unknown>;
    set?: Partial<Pick<PlanRow, "rejectReason" | "grant" | "grantExpiresAt" | "claimToken" | "leaseExpiresAt" | "outcome" | "supersededBy">>;
  } & (
    | { planId: string /** A further condition the row must meet. */; guard?: SQL }
    /** The plan found by a unique column alone (the executor's claim token), saving a read of its id. */
    | { planId?: undefined; guard: SQL }
  ),
): Promise<PlanRow | undefined> {
  const { from, to } = TRANSITIONS[input.transition];
  const at = ctx.clock();
  const [row] = await tx
    .update(plans)
    .set({ ...input.set, status: to, updatedAt: at })
    .where(and(input.planId === undefined ? undefined : eq(plans.id, input.planId), inArray(plans.status, [...from]), input.guard))
    .returning();
  if (!row) return undefined;
  await recordPlanEvent(ctx, tx, row, `plan.${to}`, input.actor, at, input.data ?? {});
  return row;
}

/**
 * A transition of a plan whose row lock the caller holds and whose status it has checked under
 * that lock (a decision): the UPDATE rides in the statement that records its event, one round
 * trip where `transition` takes two. Should the plan not be in a status the transition leaves
 * after all, it throws, and the caller's transaction rolls back with nothing written.
 */
export async function transitionLocked(
  ctx: Pick<ServiceContext, "clock" | "sinks" | "config">,
  tx: Tx,
  plan: Pick<PlanRow, "id" | "hash" | "callbackUrl" | "document">,
  input: {
    transition: Transition;
    actor: Actor;
    data?: Record<string, unknown>;
    set?: Partial<Pick<PlanRow, "rejectReason" | "grant" | "grantExpiresAt" | "claimToken" | "leaseExpiresAt" | "claims">>;
    /** The status to announce, when the caller's transaction moves the plan on again before it commits. */
    announce?: PlanRow["status"];
  },
): Promise<PlanRow["status"]> {
  const { from, to } = TRANSITIONS[input.transition];
  const at = ctx.clock();
  const update = tx
    .update(plans)
    .set({ ...input.set, status: to, updatedAt: at })
    .where(and(eq(plans.id, plan.id), inArray(plans.status, [...from])))
    .returning({ id: plans.id })
    .getSQL();
  await sendPlanEvent(ctx, tx, {
    plan: { ...plan, status: to },
    type: `plan.${to}`,
    actor: input.actor,
    at,
    data: input.data ?? {},
    first: update,
    announce: input.announce,
  });
  return to;
}

/**
 * Audit event + outbox rows + wake-up for something that happened to a plan. `records`: the
 * write the event records (an INSERT or UPDATE with RETURNING), made in the same statement
 * before the event; a write that touched no row throws, rolling the caller's transaction back.
 */
export async function recordPlanEvent(
  ctx: Pick<ServiceContext, "sinks" | "config">,
  tx: Tx,
  plan: Pick<PlanRow, "id" | "status" | "hash" | "callbackUrl" | "document">,
  type: string,
  actor: Actor,
  at: Date,
  data: Record<string, unknown>,
  records?: SQL,
): Promise<void> {
  await sendPlanEvent(ctx, tx, { plan, type, actor, at, data, first: records });
}

/** Sends one event's statement; throws when the write it records (`first`) touched no row. */
async function sendPlanEvent(ctx: Pick<ServiceContext, "sinks" | "config">, tx: Tx, event: Parameters<typeof planEventStatement>[2]): Promise<void> {
  const result = await tx.execute(planEventStatement(ctx, tx, event));
  if (event.first && Number(rowsOf<{ written: number | string }>(result)[0]?.written) !== 1)
    throw new Error(`plan ${event.plan.id}: the write its ${event.type} event records touched no row`);
}

/** Rows of a raw statement on either driver: PGlite answers `{ rows }`, postgres.js an array. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows?: T[] }).rows ?? []);
}

/**
 * The one statement that records a plan event: audit row, outbox rows and announcement (data-
 * modifying CTEs run whether or not they are read). The audit event chains to the plan's
 * previous one, which is safe because the caller holds the plan's row lock (see audit.ts).
 * `first` is a write of the caller's that goes in the same statement, before the event, and
 * returns its rows (RETURNING): a new plan (submit's keyed path), whose chain nobody else can
 * append to before it commits, so it needs no lock; or a write to a plan whose row lock the
 * caller holds (a decision). The statement answers `written`, how many rows it returned.
 */
export function planEventStatement(
  ctx: Pick<ServiceContext, "sinks" | "config">,
  db: Queryable,
  event: {
    plan: Pick<PlanRow, "id" | "status" | "hash" | "callbackUrl" | "document">;
    type: string;
    actor: Actor;
    at: Date;
    data: Record<string, unknown>;
    first?: SQL | undefined;
    announce?: string | undefined;
  },
): SQL {
  const { plan, type, actor, at, data } = event;
  const audit = auditInsert({ planId: plan.id, type, actor, data, at });
  const effects = effectsInsert(outboxRowsOf(ctx, plan, { type, status: plan.status, at: at.toISOString(), actor, data }));
  const first = event.first ? sql`first AS (${event.first}), ` : sql``;
  const alsoEffects = effects ? sql`, effects AS (${effects})` : sql``;
  const written = event.first ? sql`, (SELECT count(*) FROM first) AS written` : sql``;
  return sql`WITH ${first}audit AS (${audit})${alsoEffects} SELECT ${ListeningPlanSignals.announcement(plan.id, event.announce ?? plan.status)}${written}`;
}
