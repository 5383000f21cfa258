import { randomUUID } from "node:crypto";
import { and, count, eq, gt, isNull } from "drizzle-orm";
import type { Actor } from "../../contract/agent-api.ts";
import { SlackUserId } from "../../plan/schema.ts";
import { delegationEnd } from "../../policy/delegation-window.ts";
import { delegations } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { appendAudit } from "../records/audit.ts";
import { delegationView, type DelegationView } from "./delegation-view.ts";

/** Enough for every leave a person plans ahead; a cap on rows nobody meant. */
export const MAX_OPEN_DELEGATIONS = 20;

/** Who asks: the delegator themselves, through a door, or an admin at the command line (`name`: their --by or OS user). */
export type DelegationAuthor = { userId: string; via: "slack" | "web" } | { cli: string };

export interface CreateDelegationInput {
  delegator: string;
  delegate: string;
  /** The last day, YYYY-MM-DD, in the delegator's time zone. */
  until: string;
  /** Only these targets; absent for every target. */
  targets?: readonly string[] | undefined;
  by: DelegationAuthor;
}

type DelegationContext = Pick<ServiceContext, "database" | "clock" | "config" | "profiles">;

/**
 * A person away hands their approvals to another until the end of a day (in the delegator's
 * Slack time zone, UTC if unknown), for every target or some. Refused, saying why: delegating
 * to oneself, to a bot or someone Slack does not know, a day that has passed or lies more than
 * 90 days ahead, a target that is not configured or forbids delegates. A person delegates only
 * their own approvals; an admin at the command line may delegate anyone's.
 */
export async function createDelegation(ctx: DelegationContext, input: CreateDelegationInput): Promise<DelegationView & { timeZone: string }> {
  const delegator = slackUser(input.delegator, "delegator");
  const delegate = slackUser(input.delegate, "delegate");
  if ("userId" in input.by && input.by.userId !== delegator)
    throw new ServiceError("not_an_admin", "you may delegate only your own approvals; an admin can delegate another's with 'countersign delegate'");
  if (delegate === delegator) throw refused("/delegate", `you cannot delegate to yourself (${delegate}): name the person who decides while you are away`);
  const targets = checkedTargets(ctx, input.targets);
  const { delegatorZone } = await profilesOf(ctx, delegator, delegate);
  const now = ctx.clock();
  const end = delegationEnd(input.until, delegatorZone, now);
  if ("problem" in end) throw refused("/until", end.problem);

  const id = randomUUID();
  const createdBy = "userId" in input.by ? input.by.userId : `cli:${input.by.cli}`;
  const actor: Actor = "userId" in input.by ? { type: "user", userId: input.by.userId, via: input.by.via } : { type: "system", process: "cli" };
  const row = await ctx.database.db.transaction(async (tx) => {
    const [open] = await tx
      .select({ n: count() })
      .from(delegations)
      .where(and(eq(delegations.delegator, delegator), isNull(delegations.endedAt), gt(delegations.until, now)));
    if ((open?.n ?? 0) >= MAX_OPEN_DELEGATIONS)
      throw new ServiceError("conflict", `${delegator} has ${MAX_OPEN_DELEGATIONS} delegations in force already: end one first ('countersign delegate list')`);
    const [inserted] = await tx
      .insert(delegations)
      .values({ id, delegator, delegate, until: end.until, targets: targets ?? null, createdBy, createdAt: now })
      .returning();
    await appendAudit(tx, {
      planId: null,
      type: "delegation.created",
      actor,
      data: { id, delegator, delegate, until: end.until.toISOString(), timeZone: end.timeZone, targets: targets ?? null, by: createdBy },
      at: now,
    });
    return inserted!;
  });
  return { ...delegationView(row, now), timeZone: end.timeZone };
}

function slackUser(id: string, what: "delegator" | "delegate"): string {
  const parsed = SlackUserId.safeParse(id);
  if (!parsed.success) throw refused(`/${what}`, `the ${what} ${JSON.stringify(id)} is not a Slack user id (U…): name a person, e.g. @bob`);
  return parsed.data;
}

function refused(path: string, message: string): ServiceError {
  return new ServiceError("invalid_request", `nothing was delegated: ${message}`, { issues: [{ path, message }] });
}

/** The targets, each configured and allowing delegates; undefined for every target. */
function checkedTargets(ctx: DelegationContext, targets: readonly string[] | undefined): string[] | undefined {
  if (targets === undefined) return undefined;
  const named = [...new Set(targets)].sort();
  if (named.length === 0) throw refused("/targets", "name at least one target, or none for every target");
  for (const target of named) {
    const configured = ctx.config.targets[target];
    if (!configured)
      throw refused("/targets", `there is no target named ${JSON.stringify(target)} (configured: ${Object.keys(ctx.config.targets).join(", ")})`);
    if ((configured.policy?.delegation ?? ctx.config.defaults.delegation) === false)
      throw refused("/targets", `target ${target} lets nobody act for its approvers (policy.delegation: false)`);
  }
  return named;
}

/**
 * The delegator's time zone and that the delegate is a person who can decide: asked of Slack
 * when it is connected (without it, the day ends in UTC and nobody can be checked).
 */
async function profilesOf(ctx: DelegationContext, delegator: string, delegate: string): Promise<{ delegatorZone: string | undefined }> {
  if (!ctx.profiles) return { delegatorZone: undefined };
  const ask = async (userId: string) => {
    try {
      return await ctx.profiles!.profileOf(userId);
    } catch (err) {
      throw new ServiceError("approver_check_failed", `${(err as Error).message}; nothing was delegated, try again shortly`);
    }
  };
  const [from, to] = await Promise.all([ask(delegator), ask(delegate)]);
  if (!from) throw refused("/delegator", `Slack knows no user ${delegator}`);
  if (!to) throw refused("/delegate", `Slack knows no user ${delegate}: name a person in this workspace`);
  if (to.isBot) throw refused("/delegate", `${delegate} is a bot: only a person can decide in your place`);
  if (to.inactive) throw refused("/delegate", `${delegate} is deactivated in Slack: name someone who can decide`);
  return { delegatorZone: from.timeZone };
}
