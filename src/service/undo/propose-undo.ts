import { and, eq, inArray } from "drizzle-orm";
import { fingerprint, shortHash } from "../../plan/fingerprint.ts";
import type { Json } from "../../plan/json.ts";
import { OPEN_STATUSES } from "../../plan/lifecycle.ts";
import type { Outcome } from "../../plan/outcome.ts";
import { isPlanId, LIMITS, PlanRequest, type PersonAct, type PlanDocument } from "../../plan/schema.ts";
import { targetChangesSince, undoSteps, whyNotUndoable, type UndoStep } from "../../plan/undo-actions.ts";
import { UndoRequest, type Actor } from "../../contract/agent-api.ts";
import { userGroupsIn } from "../../policy/approvers.ts";
import { effectivePolicy } from "../../policy/effective-policy.ts";
import { whyMayNot } from "../../policy/may-act.ts";
import { redactChange } from "../../policy/redact.ts";
import { requestersOf } from "../../plan/requesters.ts";
import { plans } from "../../store/schema.ts";
import type { Queryable } from "../../store/db.ts";
import type { AgentIdentity } from "../agents/authenticate-agent.ts";
import { approverCheckFailed, membershipOf } from "../access/approver-groups.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError, type Issue } from "../errors.ts";
import { newPlanView, planView, type PlanView } from "../lifecycle/plan-view.ts";
import { planEventStatement, recordPlanEvent, type PlanRow } from "../lifecycle/transition.ts";
import { previewVersion } from "../intake/submit-plan.ts";
import { validate } from "../validate.ts";

/** The audit (and Slack) event of an applied plan whose undo was asked for: not a status change, so no webhook. */
export const UNDO_PROPOSED_EVENT = "undo.proposed";

export interface ProposeUndoInput {
  /** The applied plan to take back. */
  planId: string;
  /** Who asks: the agent that submitted the plan, or a person through a door (who may decide plans on its targets, or an admin). */
  asker: { agent: AgentIdentity } | { person: PersonAct };
  /** The agent's body (`UndoRequest`), as received; people send none. */
  request?: unknown;
}

/**
 * Asks for an applied plan to be taken back: a new plan, attributed to the original's agent (a
 * revoked one too; no agent limit applies), whose actions restore what each written action found
 * (plan/undo-actions.ts), previewed, checked and hashed as any plan is, `undoes` the original in
 * its document. Refused with nothing stored when the plan wrote nothing to take back
 * (`not_undoable`), an undo of it is open (`undo_open`, naming it), someone changed the target
 * since over the fields the plan changed (`undo_target_changed`, naming them), or its targets'
 * rules or previews refuse an action (`undo_refused`, per action). `created` is false for an
 * agent's retry under the same idempotency key.
 */
export async function proposeUndo(ctx: ServiceContext, input: ProposeUndoInput): Promise<{ created: boolean; plan: PlanView }> {
  const agent = "agent" in input.asker ? input.asker.agent : undefined;
  const person = "person" in input.asker ? input.asker.person : undefined;
  const request = agent ? validate(UndoRequest, input.request ?? {}, "the undo request") : {};
  const notFound = new ServiceError("not_found", agent ? `agent '${agent.name}' has no plan ${input.planId}` : `there is no plan ${input.planId}`);
  if (!isPlanId(input.planId)) throw notFound;
  const [original] = await ctx.database.db.select().from(plans).where(eq(plans.id, input.planId));
  if (!original || (agent && original.agentId !== agent.id)) throw notFound;
  const document = original.document as PlanDocument;
  if (person) await mayAskUndo(ctx, person, original);

  const requestDigest = fingerprint({ undoes: original.id, ...(request.ttlSeconds !== undefined ? { ttlSeconds: request.ttlSeconds } : {}) });
  if (agent && request.idempotencyKey !== undefined) {
    const earlier = await byIdempotencyKey(ctx, agent.id, request.idempotencyKey, requestDigest);
    if (earlier) return { created: false, plan: earlier };
  }
  refuseUnlessUndoable(original);
  const open = await openUndoOf(ctx.database.db, original.id);
  if (open) throw undoOpen(ctx, original.id, open);

  const steps = undoSteps({
    status: original.status,
    document,
    preview: original.preview as { actions: { before: Json | null; after: Json | null }[] },
    outcome: original.outcome as Outcome | null,
  });
  if (steps.length === 0)
    throw new ServiceError("not_undoable", `plan ${original.id} changed nothing its preview showed, so there is nothing to take back`, {
      details: { status: original.status },
    });
  const refused = steps.flatMap((step, i) => (step.refused ? [{ path: `/actions/${i}`, message: `${where(step)}: ${step.refused}` }] : []));
  if (refused.length > 0) throw undoRefused(original.id, refused);

  const askedBy = person ? { userId: person.userId, via: person.via } : undefined;
  const planRequest = PlanRequest.safeParse({
    title: `Undo: ${document.title}`.slice(0, LIMITS.maxTitle),
    reason: reasonOf(original, document, steps),
    actions: steps.map((s) => s.request),
    ...(request.ttlSeconds !== undefined ? { ttlSeconds: request.ttlSeconds } : {}),
    ...(agent && request.idempotencyKey !== undefined ? { idempotencyKey: request.idempotencyKey } : {}),
  });
  if (!planRequest.success)
    throw undoRefused(
      original.id,
      planRequest.error.issues.map((issue) => ({ path: `/${issue.path.join("/")}`, message: issue.message })),
    );

  // Previewed and checked as any plan is, for the original's agent (revoked or not: the undo is not its request).
  const owner = { id: original.agentId, name: document.agent };
  let version: Awaited<ReturnType<typeof previewVersion>>;
  try {
    version = await previewVersion(ctx, {
      agent: owner,
      request: planRequest.data,
      requestDigest,
      replaced: undefined,
      undoes: original.id,
      askedBy,
      callbackUrl: original.callbackUrl,
    });
  } catch (err) {
    // A preview that fails may be a target someone changed (a row deleted, a document created): say that first.
    if (err instanceof ServiceError && err.code === "preview_failed") await refuseChangedTargets(ctx, original, steps, await readTargets(ctx, document, steps));
    throw asUndoRefusal(err, original.id, steps);
  }
  const { stored } = version;
  // What the undo's preview read is the state its precondition binds to: it must be the state the original left.
  const seen = (stored.preview as { actions: { before: Json | null }[] }).actions.map((a) => a.before ?? undefined);
  await refuseChangedTargets(ctx, original, steps, seen);

  const actor: Actor = agent ? { type: "agent", agentId: agent.id, name: agent.name } : { type: "user", userId: person!.userId, via: person!.via };
  const at = stored.createdAt;
  const created = await ctx.database.db.transaction(async (tx) => {
    // Under the original's row lock: of two asks at once, one stores an undo and the other finds it open.
    const [locked] = await tx.select().from(plans).where(eq(plans.id, original.id)).for("update");
    if (!locked) throw notFound;
    refuseUnlessUndoable(locked);
    const racing = await openUndoOf(tx, original.id);
    if (racing) throw undoOpen(ctx, original.id, racing);
    if (stored.idempotencyKey !== null) {
      const [inserted] = await tx
        .insert(plans)
        .values(stored)
        .onConflictDoNothing({ target: [plans.agentId, plans.idempotencyKey] })
        .returning({ id: plans.id });
      if (!inserted) return false;
    } else {
      await tx.insert(plans).values(stored);
    }
    const submitted = { title: document.title, expiresAt: stored.expiresAt.toISOString(), undoes: original.id };
    await tx.execute(planEventStatement(ctx, tx, { plan: stored, type: "plan.submitted", actor, at, data: submitted }));
    await recordPlanEvent(ctx, tx, locked, UNDO_PROPOSED_EVENT, actor, at, { undo: stored.id, hash: stored.hash, ...(askedBy ? { askedBy } : {}) });
    return true;
  });
  if (!created) {
    const earlier = await byIdempotencyKey(ctx, original.agentId, request.idempotencyKey!, requestDigest);
    if (!earlier) throw new Error(`undo insert under idempotencyKey '${request.idempotencyKey}' conflicted, yet no plan holds that key`);
    return { created: false, plan: earlier };
  }
  return { created: true, plan: newPlanView(ctx.config.publicUrl, stored, agent ? "agent" : "reviewer", ctx.redaction, { undoes: original }) };
}

/** Those who may decide plans on its targets (by its recorded policy or the config now) and admins may ask; nobody else. */
async function mayAskUndo(ctx: ServiceContext, person: PersonAct, original: PlanRow): Promise<void> {
  const document = original.document as PlanDocument;
  const configured = [...new Set(document.actions.map((a) => a.target))].filter((t) => ctx.config.targets[t] !== undefined);
  const deciders =
    configured.length > 0
      ? effectivePolicy(
          ctx.config.defaults,
          configured.map((t) => ctx.config.targets[t]!.policy),
        ).approvers
      : [];
  const admins = ctx.config.admins;
  const membership = await membershipOf(ctx, person.userId, userGroupsIn([...admins, ...deciders, ...document.policy.approvers]));
  const refusal = whyMayNot(
    { userId: person.userId, memberOf: membership.memberOf },
    { status: original.status, expiresAt: original.expiresAt, hash: original.hash, requesters: requestersOf(document), policy: document.policy, approvals: [] },
    { verb: "undo", admins, deciders },
    ctx.clock(),
  );
  if (!refusal) return;
  if (membership.unchecked.length > 0) throw approverCheckFailed(ctx, membership.unchecked);
  const who = refusal.code === "not_an_approver" ? refusal.approvers : [];
  throw new ServiceError(
    "not_an_approver",
    `you may not propose an undo of this plan: only those who may decide plans on its targets (${who.join(", ") || "nobody configured"}) and admins may`,
    { details: { approvers: [...who] } },
  );
}

function refuseUnlessUndoable(plan: PlanRow): void {
  if (plan.undoneBy)
    throw new ServiceError("not_undoable", `plan ${plan.id} was already taken back by plan ${plan.undoneBy}`, {
      details: { status: plan.status, undoneBy: plan.undoneBy },
    });
  const why = whyNotUndoable({ status: plan.status, outcome: plan.outcome as Outcome | null });
  if (why) throw new ServiceError("not_undoable", `plan ${plan.id} cannot be undone: ${why}`, { details: { status: plan.status } });
}

/** An undo of the plan that is still waiting for people or the executor, if any. */
export async function openUndoOf(db: Queryable, planId: string): Promise<Pick<PlanRow, "id" | "hash" | "status"> | undefined> {
  const [open] = await db
    .select({ id: plans.id, hash: plans.hash, status: plans.status })
    .from(plans)
    .where(and(eq(plans.undoes, planId), inArray(plans.status, [...OPEN_STATUSES])))
    .limit(1);
  return open;
}

function undoOpen(ctx: ServiceContext, planId: string, open: Pick<PlanRow, "id" | "hash" | "status">): ServiceError {
  return new ServiceError("undo_open", `an undo of plan ${planId} is already ${open.status}: plan ${open.id} (${shortHash(open.hash)}); decide that one`, {
    details: { planId: open.id, hash: open.hash, status: open.status, reviewUrl: `${ctx.config.publicUrl}/plans/${open.id}` },
  });
}

function undoRefused(planId: string, issues: Issue[]): ServiceError {
  return new ServiceError("undo_refused", `the undo of plan ${planId} cannot be proposed: ${issues.map((i) => i.message).join("; ")}`, { issues });
}

const where = (step: Pick<UndoStep, "undoes" | "target" | "path">) => `action ${step.undoes + 1} (${step.target} ${step.path})`;

/** A refusal of the undo's checks or preview, said of the undo: which action, which original action, why. */
function asUndoRefusal(err: unknown, planId: string, steps: readonly UndoStep[]): unknown {
  if (!(err instanceof ServiceError) || !["policy_denied", "preview_failed", "unknown_target", "unknown_kind"].includes(err.code)) return err;
  const issues = (err.issues ?? [{ path: "", message: err.message }]).map((issue) => {
    const index = /^\/actions\/(\d+)/.exec(issue.path)?.[1];
    const step = index === undefined ? undefined : steps[Number(index)];
    return { path: issue.path, message: step ? `undoing ${where(step)}: ${issue.message}` : issue.message };
  });
  return new ServiceError("undo_refused", `the undo of plan ${planId} cannot be proposed: ${issues.map((i) => i.message).join("; ")}`, {
    issues,
    ...(err.details ? { details: err.details } : {}),
  });
}

/** Each step's resource as it is now (undefined: nothing there), read with the read credential. */
async function readTargets(ctx: ServiceContext, document: PlanDocument, steps: readonly UndoStep[]): Promise<(Json | undefined | Error)[]> {
  return Promise.all(
    steps.map(async (step) => {
      try {
        const state = await ctx.targets.readerFor(step.target).read(document.actions[step.undoes]!);
        return state.exists ? state.body : undefined;
      } catch (err) {
        return err instanceof Error ? err : new Error(String(err));
      }
    }),
  );
}

/** `undo_target_changed` when any step's target moved on from the state the plan left, naming the fields (masked as previews are). */
async function refuseChangedTargets(
  ctx: ServiceContext,
  original: PlanRow,
  steps: readonly UndoStep[],
  current: readonly (Json | undefined | Error)[],
): Promise<void> {
  const changed = steps.flatMap((step, i) => {
    const now = current[i];
    if (now instanceof Error) return [];
    const fields = targetChangesSince(step, now);
    if (fields.length === 0) return [];
    const shown = fields.map((f) => {
      const masked = redactChange(
        { path: f.path, ...(f.expected !== undefined ? { from: f.expected } : {}), ...(f.actual !== undefined ? { to: f.actual } : {}) },
        ctx.redaction,
      );
      return { path: f.path, ...(masked.from !== undefined ? { expected: masked.from } : {}), ...(masked.to !== undefined ? { actual: masked.to } : {}) };
    });
    return [{ index: i, step, fields: shown }];
  });
  if (changed.length === 0) return;
  const said = changed.map(({ step, fields }) => `${step.target} ${step.path} (${fields.map((f) => f.path || "the whole resource").join(", ")})`);
  throw new ServiceError(
    "undo_target_changed",
    `plan ${original.id} cannot be undone: its target changed since it was applied, over fields it changed: ${said.join("; ")}. Undoing it would overwrite that change; nothing was proposed`,
    {
      issues: changed.map(({ index, step, fields }) => ({
        path: `/actions/${index}`,
        message: `${where(step)} changed since: ${fields.map((f) => f.path || "/").join(", ")}`,
      })),
      details: {
        actions: changed.map(({ step, fields }) => ({ undoes: step.undoes, target: step.target, path: step.path, fields })),
      },
    },
  );
}

/** What reviewers read first: which plan this takes back, and where it starts from a state other than the approved one. */
function reasonOf(original: PlanRow, document: PlanDocument, steps: readonly UndoStep[]): string {
  const lines = [`Takes back plan ${shortHash(original.hash)} (${original.id}), "${document.title}", which was ${original.status}.`];
  if (original.status === "failed") lines.push("It failed part-way: only the actions it wrote are taken back.");
  for (const step of steps.filter((s) => s.fromReRead))
    lines.push(
      `${where(step)} did not land as approved; it is undone from the state re-read after the write (${step.drift.map((d) => d.path || "/").join(", ")}).`,
    );
  return lines.join(" ").slice(0, LIMITS.maxReason);
}

async function byIdempotencyKey(ctx: ServiceContext, agentId: string, key: string, requestDigest: string): Promise<PlanView | undefined> {
  const [row] = await ctx.database.db
    .select()
    .from(plans)
    .where(and(eq(plans.agentId, agentId), eq(plans.idempotencyKey, key)));
  if (!row) return undefined;
  if (row.requestDigest !== requestDigest)
    throw new ServiceError("idempotency_conflict", `idempotencyKey '${key}' was already used for a different plan (${row.id}); use a new key for a new undo`, {
      details: { planId: row.id },
    });
  return planView(ctx.database.db, ctx.config.publicUrl, row, "agent", ctx.redaction);
}
