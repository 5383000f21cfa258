import { editValues, type ValueEdit } from "../../plan/edit-values.ts";
import { fingerprint } from "../../plan/fingerprint.ts";
import { PlanRequest, type PersonAct, type PlanDocument } from "../../plan/schema.ts";
import type { Actor } from "../../contract/agent-api.ts";
import { plans } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { rememberDecisionTerms } from "../lifecycle/decision-terms.ts";
import { newPlanView, type PlanView } from "../lifecycle/plan-view.ts";
import { planEventStatement, type PlanRow } from "../lifecycle/transition.ts";
import { previewVersion } from "../intake/submit-plan.ts";
import { supersedeIn } from "../intake/supersede.ts";
import { validate } from "../validate.ts";
import { editablePlan, maskedBy, whyNotEditableNow, type EditTarget } from "./editable-plan.ts";

export interface EditPlanInput extends EditTarget {
  /** Text typed per value, by field key (`<action>:<JSON Pointer>`): a value left as it is changes nothing. */
  values: Readonly<Record<string, string>>;
}

export interface EditPlanResult {
  /** The new version, as reviewers see it. */
  plan: PlanView;
  edits: ValueEdit[];
}

/**
 * A reviewer edits a pending plan's values: the result is a new version exactly as the agent's
 * re-plan makes one (allowlists, a preview with the read credential, redaction, the policy, its
 * own hash and expiry), which supersedes the old one in the same transaction and records
 * `editedBy` in its hashed document. It is still the agent's plan (its agent answers for it, its
 * webhook follows it), but the agent's limits do not hold it back: nothing the agent did made it.
 * The editor becomes a requester of it, so someone else must approve it.
 */
export async function editPlan(ctx: ServiceContext, input: EditPlanInput): Promise<EditPlanResult> {
  const { row, document } = await editablePlan(ctx, input);
  const edited = editValues(document.actions, input.values, maskedBy(ctx.redaction));
  if (!edited.ok) {
    throw new ServiceError("invalid_request", `the edit is not valid: ${edited.issues.map((i) => `${i.path} ${i.message}`).join("; ")}`, {
      issues: edited.issues,
    });
  }
  const request = validate(
    PlanRequest,
    {
      title: document.title,
      ...(document.reason !== undefined ? { reason: document.reason } : {}),
      ...(document.onBehalfOf !== undefined ? { onBehalfOf: document.onBehalfOf } : {}),
      actions: edited.actions,
      // As long to decide as the agent gave the version it replaces.
      ttlSeconds: Math.max(10, Math.round((row.expiresAt.getTime() - row.createdAt.getTime()) / 1000)),
      supersedes: row.id,
    },
    "edited plan",
  );
  const editedBy: PersonAct = { userId: input.person.userId, via: input.person.via };
  const {
    document: next,
    hash,
    stored,
  } = await previewVersion(ctx, {
    agent: { id: row.agentId, name: document.agent },
    request,
    requestDigest: fingerprint(request),
    replaced: row,
    editedBy,
    // An edited undo still takes back the same plan, and its asker stays a requester.
    undoes: document.undoes,
    askedBy: document.askedBy,
    callbackUrl: row.callbackUrl,
  });
  await storeEdit(ctx, { old: row, stored, next, editedBy });
  rememberDecisionTerms(ctx.database, stored.id, { document: next, hash, expiresAt: stored.expiresAt });
  return { plan: newPlanView(ctx.config.publicUrl, stored, "reviewer", ctx.redaction, { supersedes: row }), edits: edited.edits };
}

/**
 * One transaction: the new version and its `plan.submitted` event, then the old plan
 * `superseded` by the editor (its event names the old and the new hash), under the old row's
 * lock. The admission guard is left out: an edit is not the agent's submission. Of two edits, or
 * an edit and the agent's re-plan, exactly one wins; the loser's new version rolls back with it.
 */
async function storeEdit(ctx: ServiceContext, input: { old: PlanRow; stored: PlanRow; next: PlanDocument; editedBy: PersonAct }): Promise<void> {
  const { old, stored, next, editedBy } = input;
  const actor: Actor = { type: "user", userId: editedBy.userId, via: editedBy.via };
  await ctx.database.db.transaction(async (tx) => {
    await tx.execute(
      planEventStatement(ctx, tx, {
        plan: stored,
        type: "plan.submitted",
        actor,
        at: stored.createdAt,
        data: { title: next.title, expiresAt: next.expiresAt, supersedes: old.id, editedBy },
        first: tx.insert(plans).values(stored).returning({ id: plans.id }).getSQL(),
      }),
    );
    await supersedeIn(ctx, tx, {
      oldId: old.id,
      next: { id: stored.id, hash: stored.hash },
      actor,
      edit: {
        by: editedBy,
        oldHash: old.hash,
        whyNot: async (now) =>
          now
            ? ((await whyNotEditableNow(tx, now, old.hash, ctx.clock())) ??
              new ServiceError("conflict", `plan ${old.id} changed while the edit was stored; try again`))
            : new ServiceError("not_found", `plan ${old.id} was removed while the edit was stored`),
      },
    });
  });
}
