import { randomBytes } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import type { Claim } from "../../contract/executor-api.ts";
import type { ClaimerTaken } from "../context.ts";
import { issueGrant, type GrantApprover } from "../../grant/grant.ts";
import { isPlanId, type PlanDocument } from "../../plan/schema.ts";
import { type ActionPreview } from "../../contract/agent-api.ts";
import { boundedReason } from "../access/stated-reason.ts";
import { quorumMet } from "../../policy/approvers.ts";
import { whyMayNot } from "../../policy/may-act.ts";
import { planChainTail, planGenesis } from "../records/audit.ts";
import { type Actor } from "../../contract/agent-api.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { decisionTermsOf } from "../lifecycle/decision-terms.ts";
import { approverCheckFailed, approverMembershipOf, type Membership } from "../access/approver-groups.ts";
import { judgeRecheck, recheckBeforeApprove, recheckFailedOf, refuseChanged, TargetsChanged } from "./approve-recheck.ts";
import { refusalError } from "../access/refusal-error.ts";
import { lockedWritesStatement, type LockedEvent, type LockedWrites } from "../lifecycle/locked-writes.ts";
import { isTransitionMissed, transitionsLocked, type LockedStep, type PlanRow } from "../lifecycle/transition.ts";
import type { TextStatement } from "../../store/db.ts";

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
  /** An approval recorded although its targets could not be re-read at the click: why. */
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
  // An Approve re-reads the targets first, outside the transaction, unless the plan's fixed terms
  // refuse it; what it read is judged under the row lock once may-act allows the click there, and
  // a change refuses it with target_changed (last in the refusal order) and makes the plan stale.
  const recheck =
    input.verdict === "approve" && terms
      ? await recheckBeforeApprove(ctx, { planId: input.planId, hash: input.hash, userId: input.actor.userId, memberOf: membership.memberOf }, terms)
      : undefined;

  if (!terms) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
  const { policy } = terms;
  // An executor long-polling this replica for work is handed the plan in the approval's own
  // transaction, if it reaches quorum: taken out of the queue first, so that no other approval
  // hands to it meanwhile, and put back unless it was given a claim.
  const claimer = input.verdict === "approve" ? ctx.signals.takeClaimer() : undefined;
  const decideLocked = async (claimer: ClaimerTaken | undefined): Promise<{ result: DecideResult; handed?: Claim }> => {
    let handed: Claim | undefined;
    // Sent together, in this order: the row lock, then what must be read once it is held. A
    // statement's snapshot is taken when it starts, so votes (or a pause, or the audit chain's
    // tail) read in the locking statement would miss those committed while it waited; as
    // statements of their own after it, they see them. Votes matter only with a quorum above one
    // (a pending plan has none otherwise: the first approval approved it).
    const first = [lockedPlanRead(input.planId, claimer !== undefined || recheck?.kind === "read"), planChainTail(input.planId)];
    const votesAt =
      policy.requiredApprovals > 1
        ? first.push(
            sql`SELECT user_id, via, floor(extract(epoch FROM decided_at) * 1000)::int8 AS decided_ms FROM decisions WHERE plan_id = ${input.planId} AND verdict = 'approve' ORDER BY id`,
          ) - 1
        : -1;
    // The kill switch, read inside the transaction as the claim's own statement does.
    const pauseAt = claimer ? first.push(sql`SELECT EXISTS (SELECT 1 FROM pause) AS paused`) - 1 : -1;
    // Every statement here reads or writes by key: none needs planning for its parameters' values.
    const result = await ctx.database.transactionEndingWith(
      async (_tx, read): Promise<{ result: DecideResult; last: TextStatement }> => {
        const [row] = read[0]!;
        if (!row) throw new ServiceError("not_found", `there is no plan ${input.planId}`);
        const plan = lockedPlan(row);
        const tail = String(read[1]![0]?.hash ?? planGenesis(plan.id));
        const now = ctx.clock();
        const votes =
          plan.status === "pending" && votesAt >= 0
            ? read[votesAt]!.map((v) => ({ userId: String(v.user_id), via: v.via as "slack" | "web", decidedAt: new Date(Number(v.decided_ms)) }))
            : [];
        const approvers = votes.map((v) => v.userId);

        const refusal = whyMayNot(
          { userId: input.actor.userId, memberOf: membership.memberOf },
          { status: plan.status, expiresAt: plan.expiresAt, hash: plan.hash, requesters: terms.requesters, policy, approvals: approvers },
          { verb: "decide", verdict: input.verdict, hash: input.hash },
          now,
        );
        // A group Slack could not answer for might have made this person an approver: say so rather
        // than "not an approver", and only where the earlier refusals (expired, decided…) do not apply.
        if (refusal?.code === "not_an_approver" && membership.unchecked.length > 0) throw approverCheckFailed(ctx, membership.unchecked);
        if (refusal) throw refusalError(refusal);
        let recheckFailed: string | undefined;
        if (recheck?.kind === "read") {
          const { drifted, failures } = judgeRecheck(recheck, plan.preview as { actions: ActionPreview[] });
          if (drifted.length > 0) throw new TargetsChanged(drifted);
          if (failures.length > 0) recheckFailed = recheckFailedOf(failures);
        } else if (recheck?.kind === "refused") {
          // Refused on fixed terms cannot pass the locked check above (refusals only accumulate); if it ever did, say it was not re-read.
          recheckFailed = "could not re-check: the plan changed while the click was checked";
        }

        const decision = {
          planHash: plan.hash,
          userId: input.actor.userId,
          via: input.actor.via,
          verdict: input.verdict,
          reason: reason ?? null,
          recheckFailed: recheckFailed ?? null,
          decidedAt: now,
          expiresAt: plan.expiresAt,
        };
        // Everything below is written in one statement before the COMMIT: the status was read under
        // the row lock, so no transition can miss (if one did, the statement fails and all roll back).
        const written = (writes: Omit<LockedWrites, "decision" | "announce">, status: PlanRow["status"]) =>
          lockedWritesStatement(ctx, { ...plan, tail }, { ...writes, decision, announce: status });

        if (input.verdict === "reject") {
          const { to, ...rejection } = transitionsLocked(plan, [{ transition: "reject", actor, data: { reason }, set: { rejectReason: reason ?? null } }], now);
          return { result: { status: to, approvals: approvers, requiredApprovals: policy.requiredApprovals }, last: written(rejection, to) };
        }

        const after = [...approvers, input.actor.userId];
        const also = recheckFailed ? { recheckFailed } : {};
        const vote: LockedEvent = {
          type: "decision.approve",
          status: plan.status,
          actor,
          at: now,
          data: { approvals: after.length, requiredApprovals: policy.requiredApprovals, ...also },
        };
        if (!quorumMet(after, policy))
          return {
            result: { status: plan.status, approvals: after, requiredApprovals: policy.requiredApprovals, ...also },
            last: written({ events: [vote] }, plan.status),
          };
        // The grant is what the executor will demand: plan id, exact hash, who approved, until when.
        const grantExpiresAt = new Date(now.getTime() + policy.grantTtlSeconds * 1000);
        const grantApprovers: GrantApprover[] = [
          ...votes.map((v) => ({ user: v.userId, via: v.via, at: v.decidedAt.toISOString() })),
          { user: input.actor.userId, via: input.actor.via, at: now.toISOString() },
        ];
        const grant = await issueGrant(ctx.grantKey, {
          planId: plan.id,
          planHash: plan.hash,
          approvers: grantApprovers,
          environment: terms.environment,
          issuedAt: now,
          expiresAt: grantExpiresAt,
        });
        // The hand-off claims exactly as claimApproved would: not while paused, only with a grant
        // still valid (this one), a fresh token and lease, and its own `plan.executing` event.
        const handOff = claimer && pauseAt >= 0 && read[pauseAt]![0]?.paused === false && !claimer.signal?.aborted && grantExpiresAt > now;
        const approve: LockedStep = {
          transition: "approve",
          actor,
          data: { approvers: after, grant: { jti: grant.jti, kid: ctx.grantKey.kid, expiresAt: grantExpiresAt.toISOString() } },
          set: { grant: grant.token, grantExpiresAt },
        };
        if (!handOff) {
          // Announced as approved: executors are woken to claim it.
          const { to, update, events } = transitionsLocked(plan, [approve], now);
          return {
            result: { status: to, approvals: after, requiredApprovals: policy.requiredApprovals, ...also },
            last: written({ update, events: [vote, ...events] }, to),
          };
        }
        const claimToken = randomBytes(24).toString("base64url");
        const leaseExpiresAt = new Date(now.getTime() + ctx.config.executor.leaseSeconds * 1000);
        // Approved and claimed in one UPDATE of the plan row, each with its own event; announced as
        // executing, an approval no executor needs waking for.
        const { to, update, events } = transitionsLocked(
          plan,
          [
            approve,
            {
              transition: "claim",
              actor: { type: "system", process: "executor" },
              data: { claim: plan.claims + 1, leaseExpiresAt: leaseExpiresAt.toISOString() },
              set: { claimToken, leaseExpiresAt },
              countsClaim: true,
              // Read again in the UPDATE, as claimApproved does: a pause committed since the read above
              // makes it miss, and the approval is decided again without the hand-off.
              unlessPaused: true,
            },
          ],
          now,
        );
        handed = {
          plan: plan.document as PlanDocument,
          preview: plan.preview as Claim["preview"],
          grant: grant.token,
          claimToken,
          leaseExpiresAt: leaseExpiresAt.toISOString(),
        };
        return {
          result: { status: to, approvals: after, requiredApprovals: policy.requiredApprovals, ...also },
          last: written({ update, events: [vote, ...events] }, to),
        };
      },
      { first, plans: "generic" },
    );
    return { result, ...(handed ? { handed } : {}) };
  };
  const decidedOnce = async () => {
    try {
      return await decideLocked(claimer);
    } catch (err) {
      claimer?.putBack();
      if (!claimer || !isTransitionMissed(err, "claim")) throw err;
      // Paused between the read and the claim's own statement: nothing was written; decided again, without the hand-off.
      return decideLocked(undefined);
    }
  };
  let decided: Awaited<ReturnType<typeof decideLocked>>;
  try {
    decided = await decidedOnce();
  } catch (err) {
    // Rolled back: nothing of the click was written.
    if (err instanceof TargetsChanged && recheck?.kind === "read") return refuseChanged(ctx, input.planId, recheck.actions, err.drifted);
    throw err;
  }
  const { result, handed } = decided;
  if (handed) {
    // Committed: if the request went away meanwhile, the lease runs out and another executor takes over.
    if (claimer!.give(handed)) ctx.logger.info({ planId: input.planId }, "approved plan handed to a waiting executor");
    else ctx.logger.warn({ planId: input.planId }, "executor went away while claiming; the lease will run out and another executor takes over");
  } else {
    claimer?.putBack();
  }

  if (result.recheckFailed)
    ctx.logger.warn({ planId: input.planId, why: result.recheckFailed }, "an approval's targets could not be re-checked; recorded it marked so");
  ctx.logger.info(
    { planId: input.planId, userId: input.actor.userId, via: input.actor.via, verdict: input.verdict, status: result.status },
    "decision recorded",
  );
  return result;
}

/** The plan's row, locked; the preview only for a hand-off (the claim carries it). */
function lockedPlanRead(planId: string, withPreview: boolean): SQL {
  return sql`SELECT id, status, hash, floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms, callback_url, document, claims${withPreview ? sql`, preview` : sql``}
    FROM plans WHERE id = ${planId} FOR UPDATE`;
}

function lockedPlan(row: Record<string, unknown>) {
  return {
    id: String(row.id),
    status: row.status as PlanRow["status"],
    hash: String(row.hash),
    expiresAt: new Date(Number(row.expires_ms)),
    callbackUrl: (row.callback_url as string | null) ?? null,
    // The document names the plan's outbox lanes (its review channel, its agent).
    document: JSON.parse(String(row.document)) as unknown,
    preview: row.preview === undefined ? undefined : (JSON.parse(String(row.preview)) as unknown),
    claims: Number(row.claims),
  };
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
