import { eq } from "drizzle-orm";
import { editableText, valueFields, type IsMasked, type ValueField } from "../../plan/edit-values.ts";
import { shortHash } from "../../plan/fingerprint.ts";
import { hasExpired } from "../../plan/lifecycle.ts";
import { requestersOf } from "../../plan/requesters.ts";
import { isPlanId, type PersonAct, type PlanDocument } from "../../plan/schema.ts";
import { approverGroups } from "../../policy/approvers.ts";
import { whyMayNot } from "../../policy/may-act.ts";
import { isMaskedValue, type RedactionRules } from "../../policy/redact.ts";
import type { Queryable } from "../../store/db.ts";
import { plans } from "../../store/schema.ts";
import { approverCheckFailed } from "../access/approver-groups.ts";
import { personActing } from "../access/acting-person.ts";
import { refusalError } from "../access/refusal-error.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import type { PlanRow } from "../lifecycle/transition.ts";

/** Which plan a person means to edit, and the hash of the version they were shown. */
export interface EditTarget {
  planId: string;
  hash: string;
  person: PersonAct;
}

/** Values as reviewers see them: secrets by the same rules as every preview. */
export const maskedBy =
  (rules: RedactionRules): IsMasked =>
  (pointer, value) =>
    isMaskedValue(pointer, value, rules);

/**
 * The plan, when this person may edit it now: it is still the version they were shown (one an
 * edit or a re-plan replaced is `hash_mismatch`, naming the newer version), pending and not
 * expired, they may decide it by the one rule (an approval of theirs does not stop them: no
 * approval carries over to the new version anyway), its recorded policy allows edits, and it
 * writes a value that is not a secret. Every refusal is the typed error a door words.
 */
export async function editablePlan(ctx: Pick<ServiceContext, "database" | "directory" | "clock" | "redaction">, target: EditTarget) {
  const notFound = new ServiceError("not_found", `there is no plan ${target.planId}`);
  if (!isPlanId(target.planId)) throw notFound;
  const [row] = await ctx.database.db.select().from(plans).where(eq(plans.id, target.planId));
  if (!row) throw notFound;
  const moved = await whyNotEditableNow(ctx.database.db, row, target.hash, ctx.clock());
  if (moved) throw moved;
  const document = row.document as PlanDocument;
  // A delegate edits wherever the person they act for may decide, as they decide.
  const targets = [...new Set(document.actions.map((a) => a.target))];
  const acting = await personActing(ctx, { userId: target.person.userId, groups: approverGroups(document.policy), on: { policy: document.policy, targets } });
  const refusal = whyMayNot(
    acting.person,
    { status: row.status, expiresAt: row.expiresAt, hash: row.hash, requesters: requestersOf(document), policy: document.policy, approvals: [] },
    { verb: "decide", hash: target.hash },
    ctx.clock(),
  );
  if (refusal?.code === "not_an_approver" && acting.unchecked.length > 0) throw approverCheckFailed(ctx, acting.unchecked);
  if (refusal) throw refusalError(refusal);
  if (document.policy.edits === false) {
    throw new ServiceError(
      "not_editable",
      "this plan's policy keeps its values as the agent sent them (edits: false for one of its targets); approve or reject it as it is",
    );
  }
  const fields = valueFields(document.actions, maskedBy(ctx.redaction));
  if (!fields.some((f) => !f.masked)) {
    throw new ServiceError(
      "not_editable",
      "this plan writes no value a reviewer may edit (it deletes, or every value it writes is a secret); approve or reject it as it is",
    );
  }
  return { row, document, fields };
}

/**
 * Why a plan can no longer be edited from the version a person was shown, or undefined: replaced
 * by a newer version (`hash_mismatch`, naming it), expired, decided (its status), or another hash.
 * Read again in the edit's own transaction when its conditional UPDATE finds the plan moved.
 */
export async function whyNotEditableNow(db: Queryable, row: PlanRow, hash: string, now: Date): Promise<ServiceError | undefined> {
  if (row.supersededBy) {
    const [newer] = await db.select({ id: plans.id, hash: plans.hash }).from(plans).where(eq(plans.id, row.supersededBy));
    const named = newer ? `version ${shortHash(newer.hash)} (plan ${newer.id})` : `plan ${row.supersededBy}`;
    return new ServiceError("hash_mismatch", `this plan was replaced by ${named} since you opened it; nothing was edited. Review that version`, {
      details: { expected: newer?.hash ?? null, got: hash, supersededBy: { id: row.supersededBy, ...(newer ? { hash: newer.hash } : {}) } },
    });
  }
  if (hasExpired(row, now)) {
    return new ServiceError("plan_expired", `this plan expired at ${row.expiresAt.toISOString()}; nothing was edited`, {
      details: { expiresAt: row.expiresAt.toISOString() },
    });
  }
  if (row.status !== "pending") {
    return new ServiceError("already_decided", `this plan is already ${row.status}; only a pending plan can be edited, nothing was edited`, {
      details: { status: row.status },
    });
  }
  if (hash !== row.hash) {
    return new ServiceError(
      "hash_mismatch",
      `you edited plan version ${shortHash(hash)}, but the plan is ${shortHash(row.hash)}; reload it and review what changed`,
      {
        details: { expected: row.hash, got: hash },
      },
    );
  }
  return undefined;
}

/** One value as an edit form shows it. */
export interface EditField {
  /** The form field's name (`<action>:<JSON Pointer>`). */
  key: string;
  action: number;
  target: string;
  /** The action's path as reviewers see it (a postgres.row action's table and key). */
  path: string;
  /** Into the body, or `/<column>`. */
  pointer: string;
  /** The value as JSON text to edit; absent for a secret, which is shown masked and carried over. */
  text?: string;
  masked: boolean;
}

/** What an edit form offers a person: the plan and hash it binds to, and every value the plan writes. */
export interface EditForm {
  planId: string;
  hash: string;
  fields: EditField[];
}

/**
 * The edit form for a person who may edit the plan now (editablePlan's refusals otherwise): the
 * values as JSON text read back exactly as stored, secrets left out.
 */
export async function editForm(ctx: Pick<ServiceContext, "database" | "directory" | "clock" | "redaction">, target: EditTarget): Promise<EditForm> {
  const { row, document, fields } = await editablePlan(ctx, target);
  const preview = (row.preview as { actions: { path: string }[] }).actions;
  return { planId: row.id, hash: row.hash, fields: fields.map((f) => fieldOf(f, document.actions[f.action]!.target, preview[f.action]?.path ?? "")) };
}

function fieldOf(field: ValueField, target: string, path: string): EditField {
  return {
    key: field.key,
    action: field.action,
    target,
    path,
    pointer: field.pointer,
    masked: field.masked,
    ...(field.masked ? {} : { text: editableText(field.value) }),
  };
}
