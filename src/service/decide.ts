import { and, asc, eq } from "drizzle-orm";
import { issueGrant, type GrantApprover } from "../grant/grant.ts";
import { isPlanId } from "../plan/schema.ts";
import { boundedReason } from "./stated-reason.ts";
import { quorumMet } from "../policy/approvers.ts";
import { whyMayNot } from "../policy/may-act.ts";
import { decisions, plans } from "../store/schema.ts";
import type { Actor } from "./audit.ts";
import type { ServiceContext } from "./context.ts";
import { ServiceError } from "./errors.ts";
import { decisionTermsOf } from "./decision-terms.ts";
import { approverCheckFailed, approverMembershipOf, type Membership } from "./approver-groups.ts";
import { recheckBeforeApprove } from "./approve-recheck.ts";
import { refusalError } from "./refusal-error.ts";
import { planEventStatement, transitionLocked, type PlanRow } from "./transition.ts";


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
  /** An approval recorded although its targets could not be re-read at the click: why (issue 15). */
  recheckFailed?: string;
}

/**
 * A person approves or rejects a plan. Refusals are typed errors and record nothing; whether
 * this person may decide is the one rule in `policy/may-act.ts`, asked under a row lock on the
 * plan, so concurrent clicks are neither lost nor double counted and the quorum transition
 * happens once.
 */
export async function decide(ctx: ServiceContext, input: DecideInput): Promise<DecideResult> {
  if (!isPlanId(input.planId)) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  const reason = checkedReason(input);
  const actor: Actor = { type: "user", userId: input.actor.userId, via: input.actor.via };
  // Group membership is looked up before the transaction (no network I/O while holding the
  // row lock), from the plan's terms: its document never changes, so they are read once per plan
  // and remembered, and the transaction reads only what does change.
  const terms = await decisionTermsOf(ctx.database, input.planId);
  const membership: Membership = terms ? await approverMembershipOf(ctx, input.actor.userId, terms.policy) : { memberOf: [], unchecked: [] };
  // An Approve that would be recorded re-reads the targets first, outside the transaction; a
  // change refuses it with target_changed (last in the refusal order) and makes the plan stale.
  const recheck = input.verdict === "approve" && terms
    ? await recheckBeforeApprove(ctx, { planId: input.planId, hash: input.hash, userId: input.actor.userId, memberOf: membership.memberOf }, terms)
    : undefined;
  // "refused" cannot pass the locked check below (refusals only accumulate); if it ever did, say it was not re-read.
  const recheckFailed = recheck?.kind === "unchecked" ? recheck.why : recheck?.kind === "refused" ? "could not re-check: the plan changed while the click was checked" : undefined;

  const result = await ctx.database.db.transaction(async (tx) => {
    const [plan] = await tx
      // The document names the plan's outbox lanes (its review channel, its agent).
      .select({ id: plans.id, status: plans.status, hash: plans.hash, expiresAt: plans.expiresAt, callbackUrl: plans.callbackUrl, document: plans.document })
      .from(plans)
      .where(eq(plans.id, input.planId))
      .for("update");
    if (!plan || !terms) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
    const now = ctx.clock();
    const { policy } = terms;
    // Votes are read only where there can be some that matter: with a quorum of one a pending
    // plan has none (the first approval approved it), and a plan no longer pending is refused
    // before its votes count. They are read after the lock is held, in a statement of its own: a
    // statement's snapshot is taken when it starts, so votes read together with the lock would
    // miss those committed while it waited.
    const votes = plan.status === "pending" && policy.requiredApprovals > 1
      ? await tx
        .select({ userId: decisions.userId, via: decisions.via, decidedAt: decisions.decidedAt })
        .from(decisions)
        .where(and(eq(decisions.planId, plan.id), eq(decisions.verdict, "approve")))
        .orderBy(asc(decisions.id))
      : [];
    const approvers = votes.map((v) => v.userId);

    const refusal = whyMayNot(
      { userId: input.actor.userId, memberOf: membership.memberOf },
      { status: plan.status, expiresAt: plan.expiresAt, hash: plan.hash, onBehalfOf: terms.onBehalfOf, policy, approvals: approvers },
      { verb: "decide", verdict: input.verdict, hash: input.hash },
      now,
    );
    // A group Slack could not answer for might have made this person an approver: say so rather
    // than "not an approver", and only where the earlier refusals (expired, decided…) do not apply.
    if (refusal?.code === "not_an_approver" && membership.unchecked.length > 0) throw approverCheckFailed(ctx, membership.unchecked);
    if (refusal) throw refusalError(refusal);

    const decision = tx.insert(decisions).values({
      planId: plan.id,
      planHash: plan.hash,
      userId: input.actor.userId,
      via: input.actor.via,
      verdict: input.verdict,
      reason: reason ?? null,
      recheckFailed: recheckFailed ?? null,
      decidedAt: now,
      expiresAt: plan.expiresAt,
    });

    if (input.verdict === "reject") {
      // Read under the row lock as for an approval: the decision, the UPDATE and its event go together.
      const status = await transitionLocked(ctx, tx, plan, { transition: "reject", actor, data: { reason }, set: { rejectReason: reason ?? null } }, [decision.getSQL()]);
      return { status, approvals: approvers, requiredApprovals: policy.requiredApprovals };
    }

    const after = [...approvers, input.actor.userId];
    // The vote is stored in its event's statement.
    const vote = planEventStatement(ctx, tx, { plan, type: "decision.approve", actor, at: now, data: { approvals: after.length, requiredApprovals: policy.requiredApprovals, ...(recheckFailed ? { recheckFailed } : {}) }, first: decision.getSQL() });
    if (!quorumMet(after, policy)) {
      await tx.execute(vote);
      return { status: plan.status, approvals: after, requiredApprovals: policy.requiredApprovals, ...(recheckFailed ? { recheckFailed } : {}) };
    }
    // The grant is what the executor will demand: plan id, exact hash, who approved, until when.
    const grantExpiresAt = new Date(now.getTime() + policy.grantTtlSeconds * 1000);
    const grantApprovers: GrantApprover[] = [
      ...votes.map((v) => ({ user: v.userId, via: v.via, at: v.decidedAt.toISOString() })),
      { user: input.actor.userId, via: input.actor.via, at: now.toISOString() },
    ];
    const grant = await issueGrant(ctx.grantKey, { planId: plan.id, planHash: plan.hash, approvers: grantApprovers, environment: terms.environment, issuedAt: now, expiresAt: grantExpiresAt });
    // The status was read under the row lock, so the vote, the approval and its event are sent together (one round trip).
    const status = await transitionLocked(ctx, tx, plan, {
      transition: "approve",
      actor,
      data: { approvers: after, grant: { jti: grant.jti, kid: ctx.grantKey.kid, expiresAt: grantExpiresAt.toISOString() } },
      set: { grant: grant.token, grantExpiresAt },
    }, [vote]);
    return { status, approvals: after, requiredApprovals: policy.requiredApprovals, ...(recheckFailed ? { recheckFailed } : {}) };
  });

  ctx.logger.info({ planId: input.planId, userId: input.actor.userId, via: input.actor.via, verdict: input.verdict, status: result.status }, "decision recorded");
  return result;
}

/** The reason, trimmed, once it is one a person may give: required to reject, bounded, storable. */
function checkedReason(input: DecideInput): string | undefined {
  const reason = input.reason?.trim();
  if (input.verdict === "reject" && !reason) {
    throw new ServiceError("invalid_request", "a rejection needs a reason, so the agent and the requester know what to change", { issues: [{ path: "/reason", message: "required to reject" }] });
  }
  if (reason === undefined) return undefined;
  return boundedReason(reason) || undefined;
}
