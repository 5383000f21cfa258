import { redactChange, type RedactionRules } from "./redact.ts";
import { listChanges, type Change } from "../plan/changes.ts";
import type { Json } from "../plan/json.ts";
import type { ActionPreview } from "../contract/agent-api.ts";
import { canonicalPath } from "../plan/target-path.ts";

/** One action of a version, as a reviewer names it. */
export interface ActionRef {
  target: string;
  path: string;
  op: ActionPreview["op"];
}

/** An action both versions write, whose result differs: how the new after-state differs from the old one. */
export interface ChangedAction extends ActionRef {
  /** The old version's op, when the new one writes the resource another way. */
  wasOp?: ActionPreview["op"];
  /** Old after-state → new after-state, field by field, masked as previews are. */
  changes: Change[];
}

/** "Changed since version <short hash>": what a re-plan does differently from the version it replaces. */
export interface PlanDiff {
  since: { id: string; hash: string };
  added: ActionRef[];
  removed: ActionRef[];
  changed: ChangedAction[];
  /** Actions both versions write with the same result. */
  unchanged: number;
}

/** A version as the diff reads it: its id and hash, and its preview (the after-states reviewers were shown). */
export interface Version {
  id: string;
  hash: string;
  actions: readonly ActionPreview[];
}

/**
 * Compares a re-plan with the version it replaces. Actions are the same action when they write
 * the same resource (target and canonical path: a plan writes each at most once). The after-
 * states are compared unmasked, so a secret that changed still shows as a change, and every
 * change is then masked exactly as a preview's are (redactChange): the diff never shows what the
 * preview would hide.
 */
export function planDiff(old: Version, next: Version, rules: RedactionRules): PlanDiff {
  const key = (a: ActionPreview) => `${a.target}\u0000${canonicalPath(a.path)}`;
  const before = new Map(old.actions.map((a) => [key(a), a]));
  const after = new Set(next.actions.map(key));
  const diff: PlanDiff = { since: { id: old.id, hash: old.hash }, added: [], removed: [], changed: [], unchanged: 0 };
  for (const action of next.actions) {
    const was = before.get(key(action));
    if (!was) {
      diff.added.push(refOf(action));
      continue;
    }
    const changes = listChanges(afterOf(was), afterOf(action));
    if (changes.length === 0 && was.op === action.op) {
      diff.unchanged++;
      continue;
    }
    diff.changed.push({ ...refOf(action), ...(was.op !== action.op ? { wasOp: was.op } : {}), changes: changes.map((c) => redactChange(c, rules)) });
  }
  for (const action of old.actions) if (!after.has(key(action))) diff.removed.push(refOf(action));
  return diff;
}

/** Whether a re-plan changes nothing a reviewer would see (the agent resubmitted the same thing). */
export function isEmptyDiff(diff: PlanDiff): boolean {
  return diff.added.length === 0 && diff.removed.length === 0 && diff.changed.length === 0;
}

const refOf = (a: ActionPreview): ActionRef => ({ target: a.target, path: a.path, op: a.op });

/** A deleted resource has no after-state; it is absent, not null, so deleting a field that held null still shows. */
const afterOf = (a: ActionPreview): Json | undefined => (a.after === null && a.op === "delete" ? undefined : (a.after as Json));
