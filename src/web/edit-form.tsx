/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HTTP_STATUS_OF } from "../contract/error-codes.ts";
import { neutralizeBidi } from "../plan/bidi.ts";
import { shortHash } from "../plan/fingerprint.ts";
import type { EditField, EditForm } from "../service/edit/index.ts";
import { ServiceError } from "../service/errors.ts";
import type { Notice } from "./notices.ts";

/** A form field's name for a value: the prefix keeps values apart from the form's own fields (hash, _csrf). */
const VALUE_PREFIX = "v:";

/** The edit form of a plan page, and what the person typed when their edit was refused (shown again). */
export interface EditPanel {
  form: EditForm;
  typed?: Readonly<Record<string, string>> | undefined;
}

/** The values a posted edit form carries, by field key. */
export function typedValues(form: Readonly<Record<string, string>>): Record<string, string> {
  const values: Record<string, string> = Object.create(null);
  for (const [name, text] of Object.entries(form)) if (name.startsWith(VALUE_PREFIX)) values[name.slice(VALUE_PREFIX.length)] = text;
  return values;
}

/**
 * Edit before approve, on the plan page: every value the plan writes, as JSON to change, in a
 * section closed until opened (open again after a refused edit, with what was typed). Secrets are
 * named, not shown, and carried over. What it posts becomes a new version someone else approves.
 */
export function EditValuesForm(props: { panel: EditPanel; csrf: string }) {
  const { form, typed } = props.panel;
  return (
    <details class="card edit-values" open={typed !== undefined}>
      <summary>
        <strong>Edit values</strong> <span class="muted">— fix what is almost right instead of rejecting it</span>
      </summary>
      <p class="muted">
        Change values only: what the plan writes where, and how, stays. Each value is JSON (quote strings). Your edit becomes a new version of plan{" "}
        {shortHash(form.hash)}; someone else must approve it.
      </p>
      <form method="post" action={`/plans/${form.planId}/edit`} data-edit-values>
        <input type="hidden" name="hash" value={form.hash} />
        <input type="hidden" name="_csrf" value={props.csrf} />
        {form.fields.map((field, i) => (
          <ValueInput field={field} index={i} typed={typed?.[field.key]} />
        ))}
        <button type="submit" class="approve">
          Save as a new version
        </button>
      </form>
    </details>
  );
}

function ValueInput(props: { field: EditField; index: number; typed: string | undefined }) {
  const { field, index } = props;
  const id = `edit-value-${index}`;
  const label = (
    <>
      <span class="muted">
        {field.action + 1}. {neutralizeBidi(field.target)} <code>{neutralizeBidi(field.path)}</code>
      </span>{" "}
      <code>{field.pointer === "" ? "(whole body)" : neutralizeBidi(field.pointer)}</code>
    </>
  );
  if (field.text === undefined)
    return (
      <p class="edit-value" data-secret>
        {label} <span class="badge risk-medium">secret</span> <span class="muted">carried over unchanged</span>
      </p>
    );
  return (
    <p class="edit-value">
      <label for={id}>{label}</label>
      <br />
      <textarea id={id} name={`${VALUE_PREFIX}${field.key}`} data-original={field.text} spellcheck={false} rows={field.text.length > 60 ? 4 : 1}>
        {props.typed ?? field.text}
      </textarea>
    </p>
  );
}

/**
 * A refused edit as the page shows it: the service's own sentence (it names the newer version,
 * the status, the rule), and for values that are not valid, each value by its action and field.
 */
export function editRefusal(err: unknown): { status: ContentfulStatusCode; notice: Notice } | undefined {
  if (!(err instanceof ServiceError) || err.code === "not_found") return undefined;
  const fields = (err.issues ?? []).filter((i) => i.path.startsWith("/values/"));
  const text =
    err.code === "invalid_request" && fields.length > 0
      ? `Nothing was edited: ${fields.map((i) => `${valueName(i.path.slice("/values/".length))}: ${i.message}`).join("; ")}.`
      : /nothing was edited/i.test(err.message)
        ? `${err.message[0]!.toUpperCase()}${err.message.slice(1)}.`
        : `Nothing was edited: ${err.message}.`;
  return { status: HTTP_STATUS_OF[err.code], notice: { kind: "bad", text } };
}

/** "action 1, /email" from a value's key as an issue's path segment carries it. */
function valueName(segment: string): string {
  const key = segment.replaceAll("~1", "/").replaceAll("~0", "~");
  const at = key.indexOf(":");
  const pointer = key.slice(at + 1);
  return `action ${Number(key.slice(0, at)) + 1}, ${pointer === "" ? "the whole body" : neutralizeBidi(pointer)}`;
}
