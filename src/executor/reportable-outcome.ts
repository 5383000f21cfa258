import type { Json } from "../plan/json.ts";
import type { ActionOutcome, Outcome } from "../plan/outcome.ts";

/**
 * An outcome the server will store. What the executor reports partly comes from targets (the
 * fields that changed since the preview, error details), and the server refuses, for good,
 * strings it cannot store, values nested past its limit and over-long texts. A refusal like that
 * is permanent: resending the same report would fail forever while the plan sat in `executing`.
 * So the report is made storable before it is sent; none of this changes what was written.
 */

/** Values under `changedSincePreview[].from/to` (and `driftAfterApply[].expected/actual`) sit five levels into the report; the server allows 32. */
const MAX_VALUE_DEPTH = 20;
const MAX_TEXT = 4000;
const TOO_DEEP = "(nested too deeply to report)";

export function reportableOutcome(outcome: Outcome): Outcome {
  return {
    ...outcome,
    ...(outcome.reason !== undefined ? { reason: storableText(outcome.reason, MAX_TEXT) } : {}),
    actions: outcome.actions.map((a) => ({
      ...a,
      target: storableText(a.target),
      path: storableText(a.path),
      ...(a.detail !== undefined ? { detail: storableText(a.detail, MAX_TEXT) } : {}),
      ...(a.expected !== undefined && a.expected !== null ? { expected: storableText(a.expected) } : {}),
      ...(a.now !== undefined && a.now !== null ? { now: storableText(a.now) } : {}),
      ...(a.changedSincePreview
        ? {
            changedSincePreview: a.changedSincePreview.slice(0, 200).map((c) => ({
              path: storableText(c.path),
              ...(c.from !== undefined ? { from: storableJson(c.from, MAX_VALUE_DEPTH) } : {}),
              ...(c.to !== undefined ? { to: storableJson(c.to, MAX_VALUE_DEPTH) } : {}),
            })),
          }
        : {}),
      ...(a.driftAfterApply
        ? {
            driftAfterApply: a.driftAfterApply.slice(0, 200).map((d) => ({
              path: storableText(d.path),
              ...(d.expected !== undefined ? { expected: storableJson(d.expected, MAX_VALUE_DEPTH) } : {}),
              ...(d.actual !== undefined ? { actual: storableJson(d.actual, MAX_VALUE_DEPTH) } : {}),
            })),
          }
        : {}),
    })),
  };
}

/**
 * The last resort when the server refused even the reportable form: only what the executor
 * did, per action, and why the detail is missing. Status, partial and reconciled are kept: a
 * plan that was written must never be reported as not written.
 */
export function minimalOutcome(outcome: Outcome, refusal: string): Outcome {
  const reason = `${outcome.reason ? `${outcome.reason} ` : ""}(the server refused the full report: ${refusal})`;
  return {
    status: outcome.status,
    ...(outcome.reconciled ? { reconciled: true } : {}),
    ...(outcome.partial ? { partial: true } : {}),
    reason: storableText(reason, MAX_TEXT),
    // Whether each write verified is kept too: it is what a reader of an applied plan checks first.
    actions: outcome.actions.map(
      (a): ActionOutcome => ({
        index: a.index,
        target: storableText(a.target),
        path: storableText(a.path),
        status: a.status,
        ...(a.verified !== undefined ? { verified: a.verified } : {}),
      }),
    ),
  };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Lone surrogates and NUL become U+FFFD (a report describes, it is never hashed), cut to `max`. */
function storableText(text: string, max = Infinity): string {
  const clean = text.replace(LONE_SURROGATE, "\uFFFD").replaceAll("\u0000", "\uFFFD");
  return clean.length <= max ? clean : `${clean.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, "")}…`;
}

function storableJson(value: Json, depth: number): Json {
  if (typeof value === "string") return storableText(value);
  if (typeof value !== "object" || value === null) return value;
  if (depth <= 0) return TOO_DEEP;
  if (Array.isArray(value)) return value.map((v) => storableJson(v, depth - 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), storableJson(v, depth - 1)]));
}
