import type { View } from "@slack/types";
import { neutralizeBidi } from "../plan/bidi.ts";
import { parseValueText } from "../plan/edit-values.ts";
import { shortHash } from "../plan/fingerprint.ts";
import type { EditField, EditForm } from "../service/edit/index.ts";
import { plainText, singleLine, type PlainText } from "./escape.ts";

/** What the edit dialog carries to its submission: the plan and exact hash it was opened on, and where. */
export interface EditModalMeta {
  planId: string;
  hash: string;
  channel: string;
}

/** Values the dialog offers at most; the plan page offers every one. */
export const MODAL_FIELDS = 20;
/** Characters a value may have in the dialog: Slack's limit for one text input. */
export const MODAL_VALUE_CHARS = 3000;
/** A field's key names its input block; Slack's block ids are at most this long. */
const BLOCK_ID_CHARS = 255;
const LABEL_CHARS = 2000;

/** The values the dialog can show: not secrets, and short enough for one Slack text input. */
export function offeredInModal(form: EditForm): EditField[] {
  return form.fields.filter((f) => f.text !== undefined && f.text.length <= MODAL_VALUE_CHARS && f.key.length <= BLOCK_ID_CHARS).slice(0, MODAL_FIELDS);
}

/**
 * The dialog an Edit click opens: one text input per value (block id: the field's key; the JSON
 * as stored, to change), at most MODAL_FIELDS of them, each within Slack's 3000 characters; what
 * does not fit is left to the plan page, which says so. Agent text shows as `plain_text` only.
 */
export function editModal(form: EditForm, where: { channel: string; reviewUrl: string }): View {
  const offered = offeredInModal(form);
  const secrets = form.fields.filter((f) => f.masked).length;
  const left = form.fields.length - secrets - offered.length;
  const meta: EditModalMeta = { planId: form.planId, hash: form.hash, channel: where.channel };
  const notes = [
    ...(secrets > 0 ? [`${secrets} secret value${secrets === 1 ? " is" : "s are"} carried over unchanged.`] : []),
    ...(left > 0 ? [`${left} more value${left === 1 ? "" : "s"} (too many or too long for this dialog) can be edited on the plan page.`] : []),
  ];
  return {
    type: "modal",
    callback_id: "edit",
    private_metadata: JSON.stringify(meta),
    title: { type: "plain_text", text: "Edit plan values" },
    submit: { type: "plain_text", text: "Save new version" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "section",
        text: plainText(
          `Plan ${shortHash(form.hash)}: change values only; what it writes where, and how, stays. Each value is JSON: quote strings. Your edit becomes a new version that someone else must approve.`,
          3000,
        ),
      },
      ...(notes.length > 0 ? [{ type: "context", elements: [plainText(notes.join(" "), 3000)] }] : []),
      ...(left > 0 ? [{ type: "section", text: { type: "mrkdwn", text: `<${where.reviewUrl}|Open the plan page> for every value.`, verbatim: true } }] : []),
      ...offered.map((field) => ({
        type: "input",
        block_id: field.key,
        label: fieldLabel(field),
        element: {
          type: "plain_text_input",
          action_id: "value",
          initial_value: field.text,
          multiline: field.text!.length > 60,
          max_length: MODAL_VALUE_CHARS,
        },
      })),
    ],
  } as View;
}

/** Where a value sits, as a reviewer reads it: the action, its target and path, the field. */
function fieldLabel(field: EditField): PlainText {
  const where = `${field.action + 1}. ${singleLine(field.target)} ${singleLine(field.path)}`;
  return plainText(neutralizeBidi(`${where} · ${field.pointer === "" ? "(whole body)" : field.pointer}`), LABEL_CHARS);
}

/** The edit dialog's state as Slack submits it: input blocks by id, each with its `value` element. */
type SubmittedState = Record<string, Record<string, { value?: string | null }>>;

/**
 * A submitted edit dialog: the plan it was opened on, the text of every value by field key, and
 * the fields whose text is not a JSON value a plan can hold (to show next to them, keeping the
 * dialog open). Undefined when the dialog is not one this Countersign opened.
 */
export function editSubmission(view: {
  private_metadata: string;
  state: { values: SubmittedState };
}): { meta: EditModalMeta; values: Record<string, string>; errors: Record<string, string> } | undefined {
  let meta: EditModalMeta;
  try {
    meta = JSON.parse(view.private_metadata) as EditModalMeta;
  } catch {
    return undefined;
  }
  if (typeof meta?.planId !== "string" || typeof meta.hash !== "string") return undefined;
  const values: Record<string, string> = Object.create(null);
  const errors: Record<string, string> = Object.create(null);
  for (const [blockId, block] of Object.entries(view.state.values)) {
    const text = block.value?.value ?? "";
    values[blockId] = text;
    const parsed = parseValueText(text);
    if (!parsed.ok) errors[blockId] = parsed.message;
  }
  return { meta: { planId: meta.planId, hash: meta.hash, channel: typeof meta.channel === "string" ? meta.channel : "" }, values, errors };
}
