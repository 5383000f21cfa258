import { and, eq, gt, isNull } from "drizzle-orm";
import type { Actor } from "../../contract/agent-api.ts";
import { names, userGroupsIn } from "../../policy/approvers.ts";
import { delegations } from "../../store/schema.ts";
import { membershipOf } from "../access/approver-groups.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { appendAudit } from "../records/audit.ts";
import type { DelegationAuthor } from "./create-delegation.ts";
import { delegationView, type DelegationView } from "./delegation-view.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Ends a delegation before its day: the delegator (back early), the delegate (who cannot cover),
 * an admin, or an admin at the command line. From the commit on, no click goes through it; a click
 * being recorded through it meanwhile holds it until that click commits (active-for.ts).
 */
export async function endDelegation(
  ctx: Pick<ServiceContext, "database" | "clock" | "config" | "directory">,
  input: { id: string; by: DelegationAuthor },
): Promise<DelegationView> {
  const notFound = new ServiceError("not_found", `there is no delegation ${input.id}; 'countersign delegate list' shows them`);
  if (!UUID.test(input.id)) throw notFound;
  const isAdmin = "userId" in input.by ? await namedAdmin(ctx, input.by.userId) : true;
  const by = "userId" in input.by ? input.by.userId : `cli:${input.by.cli}`;
  const actor: Actor = "userId" in input.by ? { type: "user", userId: input.by.userId, via: input.by.via } : { type: "system", process: "cli" };
  return ctx.database.db.transaction(async (tx) => {
    const now = ctx.clock();
    const [row] = await tx.select().from(delegations).where(eq(delegations.id, input.id)).for("update");
    if (!row) throw notFound;
    if (!isAdmin && by !== row.delegator && by !== row.delegate)
      throw new ServiceError("not_an_admin", "only the delegator, the delegate or an admin may end this delegation; nothing changed");
    const [ended] = await tx
      .update(delegations)
      .set({ endedAt: now, endedBy: by })
      .where(and(eq(delegations.id, row.id), isNull(delegations.endedAt), gt(delegations.until, now)))
      .returning();
    if (!ended) {
      const when = row.endedAt ? `was ended at ${row.endedAt.toISOString()}` : `ran out at ${row.until.toISOString()}`;
      throw new ServiceError("conflict", `this delegation ${when}; nothing changed`, {
        details: delegationView(row, now) as unknown as Record<string, unknown>,
      });
    }
    await appendAudit(tx, {
      planId: null,
      type: "delegation.ended",
      actor,
      data: { id: row.id, delegator: row.delegator, delegate: row.delegate, until: row.until.toISOString(), by },
      at: now,
    });
    return delegationView(ended, now);
  });
}

/** Named by `admins` (by id or a user group); a group Slack cannot answer for counts as not. */
async function namedAdmin(ctx: Pick<ServiceContext, "config" | "directory">, userId: string): Promise<boolean> {
  const admins = ctx.config.admins;
  const { memberOf } = await membershipOf(ctx, userId, userGroupsIn(admins));
  return names(admins, { userId, memberOf });
}
