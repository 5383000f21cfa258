import { eq, isNull } from "drizzle-orm";
import { isPlanId } from "../../plan/schema.ts";
import { userGroupsIn } from "../../policy/approvers.ts";
import { whyMayNot } from "../../policy/may-act.ts";
import { plans } from "../../store/schema.ts";
import type { Actor } from "../../contract/agent-api.ts";
import { approverCheckFailed, membershipOf } from "../access/approver-groups.ts";
import type { ServiceContext } from "../context.ts";
import { decisionTermsOf } from "../lifecycle/decision-terms.ts";
import { ServiceError } from "../errors.ts";
import { refusalError } from "../access/refusal-error.ts";
import { statedReason } from "../access/stated-reason.ts";
import { transition } from "../lifecycle/transition.ts";

export interface RevokePlanInput {
  planId: string;
  /** Who revokes, as a door verified them. */
  person: { userId: string; via: "slack" | "web" };
  reason: string | undefined;
}

/**
 * A person withdraws an approval before any executor has taken the plan: the plan
 * becomes `revoked` (final) and the agent is told why. Whether they may is the one rule in
 * may-act.ts, asked under the plan's row lock; the transition also demands that no claim token
 * is set. An executor's claim skips locked rows and takes only `approved` ones, so a revoke and a
 * claim racing for one plan cannot both win: whichever locks the row first decides it.
 */
export async function revokePlan(ctx: ServiceContext, input: RevokePlanInput): Promise<{ status: "revoked"; reason: string }> {
  if (!isPlanId(input.planId)) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  const terms = await decisionTermsOf(ctx.database, input.planId);
  if (!terms) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  // Group lookups happen before the transaction: no network I/O while holding the row lock.
  const admins = ctx.config.admins;
  const membership = await membershipOf(ctx, input.person.userId, userGroupsIn([...admins, ...terms.policy.approvers]));
  const actor: Actor = { type: "user", userId: input.person.userId, via: input.person.via };
  let reason = "";
  await ctx.database.db.transaction(async (tx) => {
    const [plan] = await tx
      .select({ status: plans.status, expiresAt: plans.expiresAt, hash: plans.hash })
      .from(plans)
      .where(eq(plans.id, input.planId))
      .for("update");
    if (!plan) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
    const refusal = whyMayNot(
      { userId: input.person.userId, memberOf: membership.memberOf },
      { ...plan, requesters: terms.requesters, policy: terms.policy, approvals: [] },
      { verb: "revoke", admins },
      ctx.clock(),
    );
    if (refusal?.code === "not_a_revoker" && membership.unchecked.length > 0) throw approverCheckFailed(ctx, membership.unchecked);
    if (refusal) throw refusalError(refusal);
    // Only someone who may revoke is asked for a proper reason; the row lock is held briefly either way.
    reason = statedReason(input.reason, "the agent and the approvers are told why the approval was withdrawn");
    const revoked = await transition(ctx, tx, { planId: input.planId, transition: "revoke", actor, data: { reason }, guard: isNull(plans.claimToken) });
    // Unreachable while the row lock is held (the status was just read as approved), but never silent.
    if (!revoked)
      throw new ServiceError("not_revocable", "this plan cannot be revoked: an executor has already taken it; nothing was changed", {
        details: { status: "executing" },
      });
  });
  ctx.logger.info({ planId: input.planId, userId: input.person.userId, via: input.person.via }, "plan revoked");
  return { status: "revoked", reason };
}
