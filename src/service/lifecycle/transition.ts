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

/** Audit event + outbox rows + wake-up for something that happened to a plan. */
export async function recordPlanEvent(
  ctx: Pick<ServiceContext, "sinks" | "config">,
  tx: Tx,
  plan: Pick<PlanRow, "id" | "status" | "hash" | "callbackUrl" | "document">,
  type: string,
  actor: Actor,
  at: Date,
  data: Record<string, unknown>,
): Promise<void> {
  await tx.execute(planEventStatement(ctx, tx, { plan, type, actor, at, data }));
}

/**
 * The one statement that records a plan event: audit row, outbox rows and announcement (data-
 * modifying CTEs run whether or not they are read). The audit event chains to the plan's
 * previous one, which is safe because the caller holds the plan's row lock (see audit.ts).
 * `first` is a write of the caller's that goes in the same statement, before the event: a new
 * plan (submit's keyed path), whose chain nobody else can append to before it commits, so it
 * needs no lock.
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
    first?: SQL;
    announce?: string | undefined;
  },
): SQL {
  const { plan, type, actor, at, data } = event;
  const audit = auditInsert({ planId: plan.id, type, actor, data, at });
  const effects = effectsInsert(outboxRowsOf(ctx, plan, { type, status: plan.status, at: at.toISOString(), actor, data }));
  const first = event.first ? sql`first AS (${event.first}), ` : sql``;
  const alsoEffects = effects ? sql`, effects AS (${effects})` : sql``;
  return sql`WITH ${first}audit AS (${audit})${alsoEffects} SELECT ${ListeningPlanSignals.announcement(plan.id, event.announce ?? plan.status)}`;
}
