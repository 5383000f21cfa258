import { sql } from "drizzle-orm";
import { names, userGroupsIn } from "../../policy/approvers.ts";
import { outbox, pause } from "../../store/schema.ts";
import type { Queryable, Tx } from "../../store/db.ts";
import { appendAudit } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import { approverCheckFailed, membershipOf } from "../access/approver-groups.ts";
import type { PauseState, ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { NOTICE_SINK, noticeLaneOf } from "../records/outbox-lanes.ts";
import { statedReason } from "../access/stated-reason.ts";

/** Every replica LISTENs here and re-reads the pause at once (pause-watch.ts). */
export const PAUSE_CHANNEL = "countersign_pause";

/** Who pauses or resumes: a person signed in to the browser (who must be an admin) or an operator at the CLI (who has the database). */
export type Operator = { via: "web"; userId: string } | { via: "cli"; name: string };

/** What the review channels are told, once, whichever replica's outbox worker delivers it. */
export interface PauseNotice {
  type: "countersign.paused" | "countersign.resumed";
  channel: string;
  by: string;
  via: "web" | "cli";
  reason?: string;
  at: string;
}

type PauseContext = Pick<ServiceContext, "database" | "clock" | "config"> & Partial<Pick<ServiceContext, "directory" | "pause">>;

/** The pause as stored now, or undefined when Countersign runs. */
export async function readPause(db: Queryable): Promise<PauseState | undefined> {
  const [row] = await db.select().from(pause).limit(1);
  return row && { reason: row.reason, by: row.pausedBy, via: row.via as PauseState["via"], since: row.since.toISOString() };
}

/**
 * The kill switch: from now on no executor is handed a plan (claimApproved checks the pause in
 * its own statement), while agents submit, people decide and executing plans finish. Audited,
 * announced once to the review channels, and heard by every replica through NOTIFY.
 */
export async function pauseCountersign(ctx: PauseContext, input: { operator: Operator; reason: string | undefined }): Promise<PauseState> {
  // Who may pause comes first: only an admin's reason is worth reading.
  await mustBeAdmin(ctx, input.operator);
  const reason = statedReason(input.reason, "everyone who sees the pause is told why executors are held");
  const now = ctx.clock();
  const by = byName(input.operator);
  const state = await ctx.database.db.transaction(async (tx) => {
    const [row] = await tx.insert(pause).values({ reason, pausedBy: by, via: input.operator.via, since: now }).onConflictDoNothing().returning();
    if (!row) {
      const current = await readPause(tx);
      throw new ServiceError(
        "conflict",
        `Countersign is already paused (since ${current?.since}, by ${current?.by}: ${current?.reason}); resume it first to pause with another reason`,
        { details: { pause: current } },
      );
    }
    await announce(ctx, tx, { type: "countersign.paused", operator: input.operator, reason, at: now });
    return { reason, by, via: input.operator.via, since: now.toISOString() };
  });
  await ctx.pause?.refresh(); // this replica's next page shows it without waiting for its NOTIFY
  return state;
}

/** Lifts the pause: approved plans waiting (with grants still valid) are claimed again. */
export async function resumeCountersign(ctx: PauseContext, input: { operator: Operator }): Promise<{ was: PauseState }> {
  await mustBeAdmin(ctx, input.operator);
  const now = ctx.clock();
  const resumed = await ctx.database.db.transaction(async (tx) => {
    const [row] = await tx.delete(pause).returning();
    if (!row) throw new ServiceError("conflict", "Countersign is not paused; there is nothing to resume");
    const was: PauseState = { reason: row.reason, by: row.pausedBy, via: row.via as PauseState["via"], since: row.since.toISOString() };
    await announce(ctx, tx, { type: "countersign.resumed", operator: input.operator, at: now, data: { pausedSince: was.since, pausedBy: was.by } });
    return { was };
  });
  await ctx.pause?.refresh();
  return resumed;
}

/** Whether this person is named in `admins` (by id or through a user group). */
export async function isAdmin(ctx: Pick<ServiceContext, "config"> & Partial<Pick<ServiceContext, "directory">>, userId: string): Promise<boolean> {
  const admins = ctx.config.admins;
  if (admins.includes(userId)) return true;
  const { memberOf } = await membershipOf(ctx, userId, userGroupsIn(admins));
  return names(admins, { userId, memberOf });
}

async function mustBeAdmin(ctx: PauseContext, operator: Operator): Promise<void> {
  if (operator.via === "cli") return; // the CLI runs with the database's credentials: it is the operator
  const admins = ctx.config.admins;
  if (admins.includes(operator.userId)) return;
  const { memberOf, unchecked } = await membershipOf(ctx, operator.userId, userGroupsIn(admins));
  if (names(admins, { userId: operator.userId, memberOf })) return;
  if (unchecked.length > 0) throw approverCheckFailed(ctx, unchecked);
  throw new ServiceError(
    "not_an_admin",
    admins.length === 0
      ? "only admins may pause or resume Countersign, and the config lists none (top-level `admins`); use `countersign pause` / `countersign resume` on the server"
      : "only admins (the config's top-level `admins`) may pause or resume Countersign, and you are not one of them",
  );
}

const byName = (operator: Operator) => (operator.via === "web" ? operator.userId : operator.name);

/** Audit event, one announcement per review channel (outbox rows, so one post however many replicas), and the wake-up. */
async function announce(
  ctx: PauseContext,
  tx: Tx,
  event: { type: PauseNotice["type"]; operator: Operator; reason?: string; at: Date; data?: Record<string, unknown> },
): Promise<void> {
  const { operator, at } = event;
  const actor: Actor = operator.via === "web" ? { type: "user", userId: operator.userId, via: "web" } : { type: "system", process: "cli" };
  const by = byName(operator);
  await appendAudit(tx, {
    planId: null,
    type: event.type,
    actor,
    at,
    data: { by, via: operator.via, ...(event.reason !== undefined ? { reason: event.reason } : {}), ...event.data },
  });
  const notices: PauseNotice[] = reviewChannels(ctx.config).map((channel) => ({
    type: event.type,
    channel,
    by,
    via: operator.via,
    ...(event.reason !== undefined ? { reason: event.reason } : {}),
    at: at.toISOString(),
  }));
  if (notices.length > 0) {
    await tx.insert(outbox).values(notices.map((n) => ({ planId: null, kind: NOTICE_SINK, lane: noticeLaneOf(n.channel), payload: n, availableAt: at })));
  }
  await tx.execute(sql`SELECT pg_notify(${PAUSE_CHANNEL}, ${event.type})`);
}

/**
 * Every channel plans are reviewed in: the default one and the targets' own. Read from the file's
 * settings, not from whether this process has a Slack token: the CLI never has one, and the
 * server that has it delivers the announcement.
 */
export function reviewChannels(config: Pick<ServiceContext["config"], "slack" | "targets">): string[] {
  const channels = [(config.slack as { reviewChannel?: string }).reviewChannel, ...Object.values(config.targets).map((t) => t.policy?.reviewChannel)];
  return [...new Set(channels.filter((c): c is string => typeof c === "string" && c.length > 0))];
}

/** The pause as this process knows it: the replica's watch when it has one (no query), else read now. */
export async function pauseNow(ctx: Pick<ServiceContext, "database" | "pause">): Promise<PauseState | undefined> {
  return ctx.pause ? ctx.pause.current() : readPause(ctx.database.db);
}
