/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { Change } from "../plan/changes.ts";
import type { Json } from "../plan/json.ts";
import { Wrappable } from "./wrap-points.tsx";

/** A value as the pages print it: indented JSON, or "(absent)" for a field that is not there. */
export const show = (value: Json | undefined) => (value === undefined ? "(absent)" : JSON.stringify(value, null, 2));

/** One of a table's two value columns: its heading, the label each cell shows when the table stacks on a phone, and its colour. */
export interface ValueColumn {
  heading: string;
  label: string;
  class: "before" | "after";
}

/** One field and its two values, in the order of the columns. */
export interface ValueRow {
  path: string;
  values: readonly [Json | undefined, Json | undefined];
}

const BEFORE_AFTER: readonly [ValueColumn, ValueColumn] = [
  { heading: "Before", label: "Before", class: "before" },
  { heading: "After", label: "After", class: "after" },
];

/** Field by field, two values each; on a phone the rows stack into cards whose cells carry their column's label. */
export function ValueTable(props: { columns: readonly [ValueColumn, ValueColumn]; rows: readonly ValueRow[] }) {
  const [first, second] = props.columns;
  return (
    <table class="diff stacks">
      <colgroup>
        <col class="field" />
        <col />
        <col />
      </colgroup>
      <thead>
        <tr>
          <th>Field</th>
          <th>{first.heading}</th>
          <th>{second.heading}</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row) => (
          <tr>
            <td data-label="Field">{row.path || "(whole document)"}</td>
            <td class={first.class} data-label={first.label}>
              <Wrappable text={show(row.values[0])} />
            </td>
            <td class={second.class} data-label={second.label}>
              <Wrappable text={show(row.values[1])} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * An action's change rows: field, before, after. `headings` names the two value columns where
 * "Before" and "After" would mislead (two versions of a plan); the cells keep their before/after
 * colours and phone labels.
 */
export function ChangeRows(props: { changes: readonly Change[]; headings?: readonly [string, string] | undefined }) {
  const [before, after] = BEFORE_AFTER;
  const columns: readonly [ValueColumn, ValueColumn] = props.headings
    ? [
        { ...before, heading: props.headings[0] },
        { ...after, heading: props.headings[1] },
      ]
    : BEFORE_AFTER;
  return <ValueTable columns={columns} rows={props.changes.map((c) => ({ path: c.path, values: [c.from, c.to] }))} />;
}

/** An action's change rows, or a note that it changes no field. */
export function ActionChanges(props: { changes: readonly Change[] }) {
  return props.changes.length === 0 ? <p class="muted">No field changes.</p> : <ChangeRows changes={props.changes} />;
}
