import { and, asc, eq } from "drizzle-orm";
import { issueGrant, type GrantApprover } from "../grant/grant.ts";
import { shortHash } from "../plan/fingerprint.ts";
import { hasExpired } from "../plan/lifecycle.ts";
import type { PlanDocument } from "../plan/schema.ts";
import { quorumMet, whyMayNotDecide } from "../policy/may-decide.ts";
import { decisions, plans } from "../store/schema.ts";
import type { Actor } from "./audit.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";
import { groupsOfApprover } from "./approver-groups.ts";
import { recordPlanEvent, transition, type PlanRow } from "./transition.ts";

export interface DecideInput {
  planId: string;
  /** The hash the person saw: a decision binds to exactly this. */
  hash: string;
  actor: { userId: string; via: "slack" | "web" };
  verdict: "approve" | "reject";
  reason?: string | undefined;
}

export interface DecideResult {
  status: PlanRow["status"];
  /** Distinct people who have approved so far, and how many are needed. */
  approvals: string[];
  requiredApprovals: number;
}

/**
 * A person approves or rejects a plan. Refusals are typed errors and record nothing, checked in
 * a fixed order so every door gives the same answer: expired, already decided, hash mismatch,
 * self-approval, not an approver. Votes are counted under a row lock on the plan, so
 * concurrent clicks are neither lost nor double counted, and the quorum transition happens once.
 */
export async function decide(ctx: ServiceContext, input: DecideInput): Promise<DecideResult> {
  const reason = input.reason?.trim();
  if (input.verdict === "reject" && !reason) {
    throw new ServiceError("invalid_request", "a rejection needs a reason, so the agent and the requester know what to change", { issues: [{ path: "/reason", message: "required to reject" }] });
  }
  const actor: Actor = { type: "user", userId: input.actor.userId, via: input.actor.via };
  // Group membership is looked up before the transaction (no network I/O while holding the
  // row lock); the plan document it depends on never changes, so reading it first is safe.
  const [stored] = await ctx.database.db.select({ document: plans.document }).from(plans).where(eq(plans.id, input.planId));
  const memberOf = stored ? await groupsOfApprover(ctx, input.actor.userId, (stored.document as PlanDocument).policy) : [];

  const result = await ctx.database.db.transaction(async (tx) => {
    const [plan] = await tx.select().from(plans).where(eq(plans.id, input.planId)).for("update");
    if (!plan) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
    const now = ctx.clock();
    const doc = plan.document as PlanDocument;

    if (hasExpired(plan, now)) {
      throw new ServiceError("plan_expired", `this plan expired at ${plan.expiresAt.toISOString()}; nothing was recorded. The agent must submit it again.`, { details: { expiresAt: plan.expiresAt.toISOString() } });
    }
    if (plan.status !== "pending") {
      throw new ServiceError("already_decided", `this plan is already ${plan.status}; nothing was recorded`, { details: { status: plan.status } });
    }
    if (input.hash !== plan.hash) {
      throw new ServiceError("hash_mismatch", `you decided on plan version ${shortHash(input.hash)}, but the plan is ${shortHash(plan.hash)}; reload it and review what changed`, { details: { expected: plan.hash, got: input.hash } });
    }
    const refusal = whyMayNotDecide(input.actor.userId, doc, memberOf);
    if (refusal === "self_approval") {
      throw new ServiceError("self_approval", "this plan was requested on your behalf, so someone else must decide it");
    }
    if (refusal === "not_an_approver") {
      throw new ServiceError("not_an_approver", `you may not decide this plan; it needs ${doc.policy.requiredApprovals} approval(s) from: ${doc.policy.approvers.join(", ")}`, { details: { approvers: doc.policy.approvers } });
    }

    const votes = await tx.select().from(decisions).where(and(eq(decisions.planId, plan.id), eq(decisions.verdict, "approve"))).orderBy(asc(decisions.id));
    const approvers = votes.map((v) => v.userId);
    if (input.verdict === "approve" && approvers.includes(input.actor.userId)) {
      throw new ServiceError("already_voted", "you already approved this plan; one person counts once", { details: { approvals: approvers, requiredApprovals: doc.policy.requiredApprovals } });
    }

    await tx.insert(decisions).values({
      planId: plan.id,
      planHash: plan.hash,
      userId: input.actor.userId,
      via: input.actor.via,
      verdict: input.verdict,
      reason: reason ?? null,
      decidedAt: now,
      expiresAt: plan.expiresAt,
    });

    if (input.verdict === "reject") {
      const rejected = await transition(ctx, tx, { planId: plan.id, transition: "reject", actor, data: { reason }, set: { rejectReason: reason ?? null } });
      return { status: rejected!.status, approvals: approvers, requiredApprovals: doc.policy.requiredApprovals };
    }

    const after = [...approvers, input.actor.userId];
    await recordPlanEvent(ctx, tx, plan, "decision.approve", actor, now, { approvals: after.length, requiredApprovals: doc.policy.requiredApprovals });
    if (quorumMet(after, doc.policy)) {
      // The grant is what the executor will demand: plan id, exact hash, who approved, until when.
      const grantExpiresAt = new Date(now.getTime() + doc.policy.grantTtlSeconds * 1000);
      const grantApprovers: GrantApprover[] = [
        ...votes.map((v) => ({ user: v.userId, via: v.via, at: v.decidedAt.toISOString() })),
        { user: input.actor.userId, via: input.actor.via, at: now.toISOString() },
      ];
      const grant = await issueGrant(ctx.grantKey, { planId: plan.id, planHash: plan.hash, approvers: grantApprovers, environment: doc.environment, issuedAt: now, expiresAt: grantExpiresAt });
      const approved = await transition(ctx, tx, {
        planId: plan.id,
        transition: "approve",
        actor,
        data: { approvers: after, grant: { jti: grant.jti, kid: ctx.grantKey.kid, expiresAt: grantExpiresAt.toISOString() } },
        set: { grant: grant.token, grantExpiresAt },
      });
      return { status: approved!.status, approvals: after, requiredApprovals: doc.policy.requiredApprovals };
    }
    return { status: plan.status, approvals: after, requiredApprovals: doc.policy.requiredApprovals };
  });

  ctx.logger.info({ planId: input.planId, userId: input.actor.userId, via: input.actor.via, verdict: input.verdict, status: result.status }, "decision recorded");
  return result;
}
