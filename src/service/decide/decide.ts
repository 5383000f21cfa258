import { and, asc, eq, sql } from "drizzle-orm";
import { type Actor, type ActionPreview } from "../../contract/agent-api.ts";
import { issueGrant, type GrantApprover } from "../../grant/grant.ts";
import { isPlanId } from "../../plan/schema.ts";
import { approverGroups, quorumMet } from "../../policy/approvers.ts";
import { actingFor, whyMayNot, type Person } from "../../policy/may-act.ts";
import type { Tx } from "../../store/db.ts";
import { decisions, pause, plans } from "../../store/schema.ts";
import { approverCheckFailed } from "../access/approver-groups.ts";
import { refusalError } from "../access/refusal-error.ts";
import { boundedReason } from "../access/stated-reason.ts";
import type { Claim } from "../../contract/executor-api.ts";
import type { ClaimHandOff, ServiceContext } from "../context.ts";
import { claimLocked } from "../execution/claim-approved.ts";
import { ServiceError } from "../errors.ts";
import { decisionTermsOf } from "../lifecycle/decision-terms.ts";
import { recordPlanEvent, transitionLocked, type PlanRow } from "../lifecycle/transition.ts";
import { personActing, personUnderLock } from "../access/acting-person.ts";
import { judgeRecheck, recheckBeforeApprove, recheckFailedOf, refuseChanged, TargetsChanged } from "./approve-recheck.ts";

export interface DecideInput {
  planId: string;
  /** The hash the person saw: a decision binds to exactly this. */
  hash: string;
  actor: { userId: string; via: "slack" | "web" };
  verdict: "approve" | "reject";
  reason?: string | undefined;
  /** The batch this decision was made in (Review like plans): recorded in its audit event. */
  batchId?: string | undefined;
  /** Act for this person, who delegated their approvals to the decider; absent, the rule takes the first way open (themselves first). */
  for?: string | undefined;
}

export interface DecideResult {
  status: PlanRow["status"];
  /** Distinct people who have approved so far, and how many are needed. */
  approvals: string[];
  requiredApprovals: number;
  /** An approval recorded although its targets could not be re-read at the click: why. */
  recheckFailed?: string;
  /** The person the decider acted for, through a delegation. */
  for?: string;
}

/**
 * A person approves or rejects a plan, as themselves or for someone away who delegated to them.
 * Refusals are typed errors and record nothing; whether this person may decide, and for whom, is
 * the one rule in `policy/may-act.ts`, asked under a row lock on the plan, so concurrent clicks are
 * neither lost nor double counted and the quorum transition happens once.
 */
export async function decide(ctx: ServiceContext, input: DecideInput): Promise<DecideResult> {
  if (!isPlanId(input.planId)) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  const reason = checkedReason(input);
  // Group membership and delegations are looked up before the transaction (no network I/O while
  // holding the row lock), from the plan's terms: its document never changes, so they are read once
  // per plan and remembered, and the transaction reads only what does change.
  const terms = await decisionTermsOf(ctx.database, input.planId);
  if (!terms) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  const { policy } = terms;
  // An Approve re-reads the targets first, outside the transaction, unless the plan's fixed terms
  // refuse it; what it read is judged under the row lock once may-act allows the click there, and
  // a change refuses it with target_changed (last in the refusal order) and makes the plan stale.
  // Someone named among the approvers in their own right is re-read for while their delegations
  // are looked up; anyone else once the lookup says they may approve.
  const recheckFor = (person: Person) => recheckBeforeApprove(ctx, { planId: input.planId, hash: input.hash, person, for: input.for }, terms);
  const approving = input.verdict === "approve";
  const [acting, named] = await Promise.all([
    personActing(ctx, { userId: input.actor.userId, groups: approverGroups(policy), on: terms }),
    approving && input.for === undefined ? recheckFor({ userId: input.actor.userId, memberOf: [] }) : undefined,
  ]);
  if (input.for !== undefined && !acting.person.actsFor?.some((d) => d.userId === input.for)) throw noDelegationFrom(input.for);
  const recheck = approving ? (named?.kind === "read" ? named : await recheckFor(acting.person)) : undefined;

  // An executor waiting on this replica, taken by an approval that reached the quorum: handed the
  // claim once the transaction commits, let go to claim as usual if it rolls back.
  let taken: ClaimHandOff | undefined;
  try {
    const { claim, ...decided } = await ctx.database.db.transaction(async (tx): Promise<DecideResult & { claim?: Claim }> => {
      const plan = await lockedPlan(tx, input.planId);
      if (!plan) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
      const now = ctx.clock();
      // Votes are read after the row lock is held, in a statement of their own, so they include
      // every vote committed while this click waited for the lock.
      const votes = plan.status === "pending" && policy.requiredApprovals > 1 ? await approvalsOf(tx, plan.id) : [];
      const approvers = votes.map((v) => v.userId);
      // Delegations are read again under a share lock: one ended since the lookup refuses the click.
      const person = await personUnderLock(tx, acting);
      const facts = {
        status: plan.status,
        expiresAt: plan.expiresAt,
        hash: plan.hash,
        requesters: terms.requesters,
        policy,
        approvals: approvers,
        actedFor: votes.flatMap((v) => (v.for ? [v.for] : [])),
      };
      const act = { verb: "decide", verdict: input.verdict, hash: input.hash, for: input.for } as const;
      const refusal = whyMayNot(person, facts, act, now);
      // A group Slack could not answer for might have made this person an approver: say so rather
      // than "not an approver", and only where the earlier refusals (expired, decided…) do not apply.
      if (refusal?.code === "not_an_approver" && acting.unchecked.length > 0) throw approverCheckFailed(ctx, acting.unchecked);
      if (refusal) throw refusalError(refusal);
      const actedFor = actingFor(person, facts, act, now);
      const actor: Actor = { type: "user", userId: input.actor.userId, via: input.actor.via, ...(actedFor ? { for: actedFor } : {}) };
      const recheckFailed = recheckFailedUnderLock(recheck, plan);

      const decision = tx
        .insert(decisions)
        .values({
          planId: plan.id,
          planHash: plan.hash,
          userId: input.actor.userId,
          via: input.actor.via,
          verdict: input.verdict,
          reason: reason ?? null,
          recheckFailed: recheckFailed ?? null,
          decidedAt: now,
          expiresAt: plan.expiresAt,
          forUser: actedFor ?? null,
        })
        .returning({ id: decisions.id });
      const also = { ...(recheckFailed ? { recheckFailed } : {}), ...(actedFor ? { for: actedFor } : {}) };
      const batch = input.batchId ? { batchId: input.batchId } : {};

      if (input.verdict === "reject") {
        await decision;
        const status = await transitionLocked(ctx, tx, plan, {
          transition: "reject",
          actor,
          data: { reason, ...batch },
          set: { rejectReason: reason ?? null },
        });
        return { status, approvals: approvers, requiredApprovals: policy.requiredApprovals, ...(actedFor ? { for: actedFor } : {}) };
      }

      // The vote goes out with its event in one statement (the click path's round trips are what
      // the approve_to_patch bench line weighs).
      const after = [...approvers, input.actor.userId];
      const data = { approvals: after.length, requiredApprovals: policy.requiredApprovals, ...(recheckFailed ? { recheckFailed } : {}), ...batch };
      const approved = { approvals: after, requiredApprovals: policy.requiredApprovals, ...also };
      const vote = () => recordPlanEvent(ctx, tx, plan, "decision.approve", actor, now, data, decision.getSQL());
      if (!quorumMet(after, policy)) {
        await vote();
        return { status: plan.status, ...approved };
      }

      // The grant is what the executor will demand: plan id, exact hash, who approved, until when.
      const grantExpiresAt = new Date(now.getTime() + policy.grantTtlSeconds * 1000);
      const grantApprovers: GrantApprover[] = [
        ...votes.map((v) => ({ user: v.userId, via: v.via, at: v.decidedAt.toISOString(), ...(v.for ? { for: v.for } : {}) })),
        { user: input.actor.userId, via: input.actor.via, at: now.toISOString(), ...(actedFor ? { for: actedFor } : {}) },
      ];
      // Who each approver acted for, where someone did: the thread and the page say "Bob for Alice".
      const forWhom = Object.fromEntries(grantApprovers.flatMap((a) => (a.for ? [[a.user, a.for]] : [])));
      // An executor waiting on this replica gets the plan in this transaction (claimLocked), unless
      // Countersign is paused; otherwise the approval is announced and wakes one to claim it.
      taken = plan.paused ? undefined : ctx.signals.takeClaimer(ctx.grantKey.kid);
      const approveAndClaim = (grant: { token: string; jti: string }) =>
        Promise.all([
          transitionLocked(ctx, tx, plan, {
            transition: "approve",
            actor,
            data: {
              approvers: after,
              ...(Object.keys(forWhom).length > 0 ? { actedFor: forWhom } : {}),
              grant: { jti: grant.jti, kid: ctx.grantKey.kid, expiresAt: grantExpiresAt.toISOString() },
            },
            set: { grant: grant.token, grantExpiresAt },
            ...(taken ? { announce: "executing" as const } : {}),
          }),
          taken ? claimLocked(ctx, tx, plan, grant.token) : undefined,
        ]);
      // The vote goes out while the grant is signed; the approval and the claim follow it without
      // waiting for its answer. None depends on another's answer, and they run in the order sent,
      // so their events chain in it (postgres.js pipelines the statements of a transaction that
      // are not awaited one by one; PGlite runs them in turn).
      const grantTerms = {
        planId: plan.id,
        planHash: plan.hash,
        approvers: grantApprovers,
        environment: terms.environment,
        issuedAt: now,
        expiresAt: grantExpiresAt,
      };
      const [, [status, claim]] = await Promise.all([vote(), issueGrant(ctx.grantKey, grantTerms).then(approveAndClaim)]);
      return claim ? { status: "executing", ...approved, claim } : { status, ...approved };
    });
    if (claim && !taken!.handOff(claim))
      ctx.logger.warn(
        { planId: input.planId },
        "the executor an approval claimed its plan for went away; the lease will run out and another executor takes over",
      );
    return logged(ctx, input, decided);
  } catch (err) {
    taken?.letGo();
    // Rolled back: nothing of the click was written.
    if (err instanceof TargetsChanged && recheck?.kind === "read") return refuseChanged(ctx, input.planId, recheck.actions, err.drifted);
    throw err;
  }
}

/** Logs what a decision did, once it has committed. */
function logged(ctx: ServiceContext, input: DecideInput, result: DecideResult): DecideResult {
  if (result.recheckFailed)
    ctx.logger.warn({ planId: input.planId, why: result.recheckFailed }, "an approval's targets could not be re-checked; recorded it marked so");
  ctx.logger.info(
    { planId: input.planId, userId: input.actor.userId, via: input.actor.via, for: result.for, verdict: input.verdict, status: result.status },
    "decision recorded",
  );
  return result;
}

/**
 * Judges the targets an Approve re-read before its transaction against the plan's preview: a
 * change refuses the click (TargetsChanged, last in the refusal order, as may-act has allowed it
 * by now); a target that could not be read records the approval marked so.
 */
function recheckFailedUnderLock(recheck: Awaited<ReturnType<typeof recheckBeforeApprove>> | undefined, plan: LockedPlan): string | undefined {
  if (recheck?.kind === "read") {
    const { drifted, failures } = judgeRecheck(recheck, plan.preview as { actions: ActionPreview[] });
    if (drifted.length > 0) throw new TargetsChanged(drifted);
    return failures.length > 0 ? recheckFailedOf(failures) : undefined;
  }
  // Refused on fixed terms cannot pass the locked check (refusals only accumulate); if it ever did, say it was not re-read.
  if (recheck?.kind === "refused") return "could not re-check: the plan changed while the click was checked";
  return undefined;
}

type LockedPlan = Pick<PlanRow, "id" | "status" | "hash" | "expiresAt" | "callbackUrl" | "document" | "preview" | "claims"> & { paused: boolean };

/** The plan's row, locked for the rest of the transaction, and whether Countersign is paused (no approval claims while it is). */
async function lockedPlan(tx: Tx, planId: string): Promise<LockedPlan | undefined> {
  const [row] = await tx
    .select({
      id: plans.id,
      status: plans.status,
      hash: plans.hash,
      expiresAt: plans.expiresAt,
      callbackUrl: plans.callbackUrl,
      document: plans.document,
      preview: plans.preview,
      claims: plans.claims,
      paused: sql<boolean>`exists (select 1 from ${pause})`,
    })
    .from(plans)
    .where(eq(plans.id, planId))
    .for("update");
  return row;
}

/** A `for` that names nobody the decider holds a delegation from, for this plan's targets. */
function noDelegationFrom(delegator: string): ServiceError {
  return new ServiceError("not_an_approver", `you hold no delegation from ${delegator} in force for this plan's targets; nothing was recorded`, {
    issues: [{ path: "/for", message: "no delegation in force from this person" }],
  });
}

/** The approvals recorded so far, oldest first, each with whom it was made for. */
async function approvalsOf(tx: Tx, planId: string) {
  return tx
    .select({ userId: decisions.userId, via: decisions.via, decidedAt: decisions.decidedAt, for: decisions.forUser })
    .from(decisions)
    .where(and(eq(decisions.planId, planId), eq(decisions.verdict, "approve")))
    .orderBy(asc(decisions.id));
}

/** The reason, trimmed, once it is one a person may give: required to reject, bounded, storable. */
function checkedReason(input: DecideInput): string | undefined {
  const reason = input.reason?.trim();
  if (input.verdict === "reject" && !reason) {
    throw new ServiceError("invalid_request", "a rejection needs a reason, so the agent and the requester know what to change", {
      issues: [{ path: "/reason", message: "required to reject" }],
    });
  }
  if (reason === undefined) return undefined;
  return boundedReason(reason) || undefined;
}
