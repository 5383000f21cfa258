/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { Json } from "../plan/json.ts";
import type { ActionOutcome, Outcome } from "../plan/outcome.ts";
import { Wrappable } from "./wrap-points.tsx";

const show = (value: Json | undefined) => (value === undefined ? "(absent)" : JSON.stringify(value, null, 2));

/**
 * What the executor's re-read after each write found (verify after apply), on the
 * plan page: a note per action in the outcome table, and for each write that did not land as
 * previewed, the fields where the target differs. The values arrive masked (the reviewer's view).
 */
export function VerifiedNote(props: { action: ActionOutcome }) {
  const { verified } = props.action;
  if (verified === true)
    return (
      <span class="muted" data-verified="true">
        {" "}
        · verified
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
            <strong>Action {a.index}</strong> <code>{a.path}</code>: the target, re-read after the write, does not hold what was approved.
          </p>
          <table class="diff stacks">
            <colgroup>
              <col class="field" />
              <col />
              <col />
            </colgroup>
            <thead>
              <tr>
                <th>Field</th>
                <th>Approved</th>
                <th>Target has</th>
              </tr>
            </thead>
            <tbody>
              {a.driftAfterApply!.map((d) => (
                <tr>
                  <td data-label="Field">{d.path || "(whole document)"}</td>
                  <td class="after" data-label="Approved">
                    <Wrappable text={show(d.expected)} />
                  </td>
                  <td class="before" data-label="Target has">
                    <Wrappable text={show(d.actual)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </>
  );
}
