/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { ActionOutcome, Outcome } from "../plan/outcome.ts";
import { ValueTable, type ValueColumn } from "./change-rows.tsx";

/** The approved value (coloured as an after-state) beside what the target holds (coloured as a before-state). */
const DRIFT_COLUMNS: readonly [ValueColumn, ValueColumn] = [
  { heading: "Approved", label: "Approved", class: "after" },
  { heading: "Target has", label: "Target has", class: "before" },
];

/**
 * What the executor's re-read after each write found (verify after apply), on the
 * plan page: a note per action in the outcome table, and for each write that did not land as
 * previewed, the fields where the target differs. The values arrive masked (the reviewer's view).
 */
export function VerifiedNote(props: { action: ActionOutcome }) {
  const { verified } = props.action;
  // No-break spaces: "· verified" never leaves "verified" alone under the dot.
  if (verified === true)
    return (
      <span class="muted verified" data-verified="true">
        {"\u00a0·\u00a0verified"}
      </span>
    );
  if (verified === false)
    return (
      <span class="badge risk-high" data-verified="false" title="The target, re-read after the write, does not hold what was previewed">
        {" "}
        not as previewed
      </span>
    );
  if (verified === null)
    return (
      <span class="badge risk-medium" data-verified="unknown" title="The target could not be re-read after the write">
        {" "}
        not re-checked
      </span>
    );
  return null;
}

/** " — not as previewed" when a write's re-read differs from the preview, for the outcome's heading. */
export function driftHeading(outcome: Outcome): string {
  const drifted = outcome.actions.filter((a) => a.verified === false).length;
  return drifted === 0 ? "" : ` — ${drifted === 1 ? "1 write" : `${drifted} writes`} not as previewed`;
}

export function DriftAfterApply(props: { outcome: Outcome }) {
  const drifted = props.outcome.actions.filter((a) => a.driftAfterApply && a.driftAfterApply.length > 0);
  if (drifted.length === 0) return null;
  return (
    <>
      {drifted.map((a) => (
        <div class="drift-after-apply" data-action={a.index}>
          <p>
            <strong>Action {a.index + 1}</strong> <code>{a.path}</code>: the target, re-read after the write, does not hold what was approved.
          </p>
          <ValueTable columns={DRIFT_COLUMNS} rows={a.driftAfterApply!.map((d) => ({ path: d.path, values: [d.expected, d.actual] }))} />
        </div>
      ))}
    </>
  );
}
