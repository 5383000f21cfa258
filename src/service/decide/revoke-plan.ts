import { eq, isNull } from "drizzle-orm";
import { isPlanId } from "../../plan/schema.ts";
import { userGroupsIn } from "../../policy/approvers.ts";
import { actingFor, whyMayNot } from "../../policy/may-act.ts";
import { plans } from "../../store/schema.ts";
import type { Actor } from "../../contract/agent-api.ts";
import { approverCheckFailed } from "../access/approver-groups.ts";
import { personActing, personUnderLock } from "../access/acting-person.ts";
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
 * A person withdraws an approval before any executor has taken the plan, as themselves or for
 * an approver who delegated to them: the plan becomes `revoked` (final) and the agent is told why. Whether they may is the one rule in
 * may-act.ts, asked under the plan's row lock; the transition also demands that no claim token
 * is set. An executor's claim skips locked rows and takes only `approved` ones, so a revoke and a
 * claim racing for one plan cannot both win: whichever locks the row first decides it.
 */
export async function revokePlan(ctx: ServiceContext, input: RevokePlanInput): Promise<{ status: "revoked"; reason: string }> {
  if (!isPlanId(input.planId)) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  const terms = await decisionTermsOf(ctx.database, input.planId);
  if (!terms) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  // Group and delegation lookups happen before the transaction: no network I/O while holding the row lock.
  const admins = ctx.config.admins;
  const acting = await personActing(ctx, { userId: input.person.userId, groups: userGroupsIn([...admins, ...terms.policy.approvers]), on: terms });
  let reason = "";
  await ctx.database.db.transaction(async (tx) => {
    const [plan] = await tx
      .select({ status: plans.status, expiresAt: plans.expiresAt, hash: plans.hash })
      .from(plans)
      .where(eq(plans.id, input.planId))
      .for("update");
    if (!plan) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
    const person = await personUnderLock(tx, acting);
    const facts = { ...plan, requesters: terms.requesters, policy: terms.policy, approvals: [] };
    const now = ctx.clock();
    const refusal = whyMayNot(person, facts, { verb: "revoke", admins }, now);
    if (refusal?.code === "not_a_revoker" && acting.unchecked.length > 0) throw approverCheckFailed(ctx, acting.unchecked);
    if (refusal) throw refusalError(refusal);
    const actedFor = actingFor(person, facts, { verb: "revoke", admins }, now);
    const actor: Actor = { type: "user", userId: input.person.userId, via: input.person.via, ...(actedFor ? { for: actedFor } : {}) };
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
