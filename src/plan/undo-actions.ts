import { isDeepStrictEqual } from "node:util";
import { afterApplyMismatches, valueAt, type AfterApplyMismatch } from "./holds-change.ts";
import { isJsonObject, type Json, type JsonObject } from "./json.ts";
import type { Outcome } from "./outcome.ts";
import type { ActionRequest, PlanDocument, PlannedAction, PlanStatus } from "./schema.ts";

/**
 * Taking back an applied plan: from its document, what its preview showed (the before-state of
 * every action) and what the executor reported, the actions of a new plan that restore each
 * written action's before-state, last written first. Pure: the undo verb previews what this
 * returns like any plan's actions, and checks the target against `expectedNow` first.
 */

/** What the preview recorded for one action: the state it read, and the state it approved. */
export interface SeenState {
  before: Json | null;
  after: Json | null;
}

/** An applied plan as the undo reads it. */
export interface UndoSource {
  status: PlanStatus;
  document: Pick<PlanDocument, "actions">;
  preview: { actions: readonly SeenState[] };
  outcome: Outcome | null | undefined;
}

/** One action of the undo: which original action it takes back, and what it sends (or why it cannot). */
export type UndoStep = {
  /** The index of the original action this step takes back. */
  undoes: number;
  target: string;
  path: string;
  /** What the target should hold now over the fields the original changed, and the state to restore. */
  expectedNow: Json | null;
  restore: Json | null;
  /** The original's before → after, whose changed fields the check covers. */
  seen: SeenState;
  /** The write did not land as approved (`verified: false`): this step starts from the state re-read after it. */
  fromReRead: boolean;
  /** Fields the re-read after the original write found differing, as recorded (path, expected, actual). */
  drift: readonly AfterApplyMismatch[];
} & ({ request: ActionRequest; refused?: undefined } | { request?: undefined; refused: string });

/**
 * Why a plan in this state cannot be undone, or undefined when it can: an applied plan, or a
 * failed one whose outcome is `partial` (some of its actions were written).
 */
export function whyNotUndoable(plan: Pick<UndoSource, "status" | "outcome">): string | undefined {
  if (plan.status === "applied") return undefined;
  if (plan.status === "failed" && plan.outcome?.partial) return undefined;
  if (plan.status === "failed") return "it failed before any of its actions was written, so there is nothing to take back";
  return `it is ${plan.status}: only an applied plan (or a failed one that was partly applied) wrote anything to take back`;
}

/**
 * The undo's steps, in reverse order of the original's actions: one per action the executor
 * reported `applied`, except those whose after-state equals their before-state (nothing to take
 * back). A step that cannot be expressed says why in `refused`.
 */
export function undoSteps(source: UndoSource): UndoStep[] {
  const applied = (source.outcome?.actions ?? []).filter((a) => a.status === "applied");
  const steps: UndoStep[] = [];
  for (const result of [...applied].sort((a, b) => b.index - a.index)) {
    const planned = source.document.actions[result.index];
    const seen = source.preview.actions[result.index];
    if (!planned || !seen) continue;
    const drift = result.verified === false ? (result.driftAfterApply ?? []) : [];
    const expectedNow = reReadState(seen.after, drift);
    if (isDeepStrictEqual(seen.before, seen.after)) continue;
    const step = stepFor(planned, seen, expectedNow);
    if (step === undefined) continue;
    steps.push({
      undoes: result.index,
      target: planned.target,
      path: planned.path,
      expectedNow,
      restore: seen.before,
      seen,
      fromReRead: result.verified === false,
      drift,
      ...step,
    });
  }
  return steps;
}

/**
 * Where the target, read now, differs from what the undo expects over the fields the original
 * changed: its approved after-state, or for a write that did not land as approved, the state
 * re-read after it (a field that drifted must still hold what the re-read found). Empty: the
 * undo may go ahead.
 */
export function targetChangesSince(step: Pick<UndoStep, "seen" | "drift">, current: Json | undefined): AfterApplyMismatch[] {
  const drifted = new Set(step.drift.map((d) => d.path));
  const changes = afterApplyMismatches(step.seen.before, step.seen.after, current).filter((m) => !drifted.has(m.path));
  for (const d of step.drift) {
    const now = valueAt(current, d.path);
    if (isDeepStrictEqual(now, d.actual)) continue;
    changes.push({ path: d.path, ...(d.actual !== undefined ? { expected: d.actual } : {}), ...(now !== undefined ? { actual: now } : {}) });
  }
  return changes;
}

/** The approved after-state with each drifted field as the re-read after the write found it. */
function reReadState(after: Json | null, drift: readonly AfterApplyMismatch[]): Json | null {
  let state: Json | undefined = after ?? undefined;
  for (const d of drift) state = setAt(state, d.path, d.actual);
  return state ?? null;
}

/** The action that takes one written action back, or undefined when nothing needs doing. */
function stepFor(planned: PlannedAction, seen: SeenState, now: Json | null): { request: ActionRequest } | { refused: string } | undefined {
  return planned.kind === "http.json" ? httpJsonStep(planned, seen, now) : postgresRowStep(planned, seen, now);
}

type HttpJsonPlanned = Extract<PlannedAction, { kind: "http.json" }>;
type PostgresRowPlanned = Extract<PlannedAction, { kind: "postgres.row" }>;

function httpJsonStep(planned: HttpJsonPlanned, seen: SeenState, now: Json | null): { request: ActionRequest } | { refused: string } | undefined {
  const { target, path } = planned;
  const before = seen.before;
  if (planned.op === "create" || before === null) return { request: { kind: "http.json", target, path, op: "delete" } };
  const documentBody = typeof before === "object" ? before : undefined;
  const replaceBack = () =>
    documentBody !== undefined
      ? { request: { kind: "http.json", target, path, op: "replace", body: documentBody } as ActionRequest }
      : { refused: `the document before was ${JSON.stringify(before).slice(0, 60)}, not a JSON object or array, so it cannot be written back` };
  if (planned.op === "delete") {
    return documentBody !== undefined
      ? { request: { kind: "http.json", target, path, op: "create", body: documentBody } }
      : { refused: `the deleted document was ${JSON.stringify(before).slice(0, 60)}, not a JSON object or array, so it cannot be created again` };
  }
  if (planned.op === "replace") return replaceBack();
  // A merge: patch back the members it changed, removing those it added; where a merge patch
  // cannot say it (a member that was JSON null), the whole document before is put back.
  const patch = restoringPatch(now ?? {}, before);
  if (patch === SAME) return undefined;
  if (patch === undefined || !isJsonObject(patch)) return replaceBack();
  return { request: { kind: "http.json", target, path, op: "merge", body: patch } };
}

function postgresRowStep(planned: PostgresRowPlanned, seen: SeenState, now: Json | null): { request: ActionRequest } | { refused: string } | undefined {
  const { target, table } = planned;
  const key: Record<string, string | number> = {};
  for (const [column, value] of Object.entries(planned.key)) {
    if (typeof value !== "string" && typeof value !== "number")
      return { refused: `key column '${column}' holds ${JSON.stringify(value)}, which a row key cannot name` };
    key[column] = value;
  }
  if (planned.op === "insert") return { request: { kind: "postgres.row", target, table, key, op: "delete" } };
  const before = isJsonObject(seen.before) ? seen.before : undefined;
  if (before === undefined) return { refused: "the row before was not recorded, so it cannot be written back" };
  if (planned.op === "delete") {
    const values: JsonObject = {};
    for (const [column, value] of Object.entries(before)) if (!Object.hasOwn(key, column)) values[column] = value;
    return { request: { kind: "postgres.row", target, table, key, op: "insert", values } };
  }
  // An update: set back the columns it set whose value is not already the one before.
  const current = isJsonObject(now) ? now : {};
  const values: JsonObject = {};
  for (const column of Object.keys(planned.values ?? {})) {
    const was = Object.hasOwn(before, column) ? before[column]! : null;
    if (!isDeepStrictEqual(current[column], was)) values[column] = was;
  }
  if (Object.keys(values).length === 0) return undefined;
  return { request: { kind: "postgres.row", target, table, key, op: "update", values } };
}

/** `from` already equals `to`: no patch is needed. */
const SAME = Symbol("same");

/**
 * A JSON Merge Patch (RFC 7396) that turns `from` into `to`, as small as the two allow: members
 * `to` lacks are set to null, changed ones patched (objects member by member, anything else
 * whole). Undefined when no patch can: `to` holds a JSON null inside an object the patch must
 * write, which a merge patch reads as "remove".
 */
export function restoringPatch(from: Json, to: Json): Json | typeof SAME | undefined {
  if (isDeepStrictEqual(from, to)) return SAME;
  if (!isJsonObject(to)) return to === null ? undefined : to;
  if (!isJsonObject(from)) return holdsObjectNull(to) ? undefined : to;
  const patch: JsonObject = {};
  for (const key of Object.keys(from)) if (!Object.hasOwn(to, key)) define(patch, key, null);
  for (const [key, value] of Object.entries(to)) {
    const sub = Object.hasOwn(from, key) ? restoringPatch(from[key]!, value) : value === null || holdsObjectNull(value) ? undefined : value;
    if (sub === undefined) return undefined;
    if (sub !== SAME) define(patch, key, sub);
  }
  return patch;
}

/** A member named "__proto__" stays data. */
function define(object: JsonObject, key: string, value: Json): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Whether a patch writing this value would lose a null member of one of its objects (arrays are written whole). */
function holdsObjectNull(value: Json): boolean {
  if (!isJsonObject(value)) return false;
  return Object.values(value).some((v) => v === null || holdsObjectNull(v));
}

/** The value with the member at a JSON Pointer set (undefined: removed). Objects on the way are made; pure. */
export function setAt(doc: Json | undefined, pointer: string, value: Json | undefined): Json | undefined {
  if (pointer === "") return value;
  const [head, ...rest] = pointer.slice(1).split("/");
  const key = head!.replaceAll("~1", "/").replaceAll("~0", "~");
  const tail = rest.length === 0 ? "" : `/${rest.join("/")}`;
  if (Array.isArray(doc) && /^(0|[1-9]\d*)$/.test(key)) {
    const copy = [...doc];
    const next = setAt(copy[Number(key)], tail, value);
    if (next === undefined) copy.splice(Number(key), 1);
    else copy[Number(key)] = next;
    return copy;
  }
  const object: JsonObject = isJsonObject(doc) ? { ...doc } : {};
  const next = setAt(Object.hasOwn(object, key) ? object[key] : undefined, tail, value);
  if (next === undefined) delete object[key];
  else define(object, key, next);
  return object;
}
