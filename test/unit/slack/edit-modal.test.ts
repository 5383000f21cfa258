import { describe, expect, it } from "vitest";
import type { EditField, EditForm } from "../../../src/service/edit/index.ts";
import { editModal, editSubmission, MODAL_FIELDS, MODAL_VALUE_CHARS } from "../../../src/slack/edit-modal.ts";
import { renderThreadReply } from "../../../src/slack/render.ts";
import { blocksJson, buttonIds, PLAN_HASH, PLAN_ID, planMessage } from "../../support/plan-fixtures.ts";
import { validateView } from "../../support/slack-emulator.ts";

const field = (i: number, extra: Partial<EditField> = {}): EditField => ({
  key: `0:/f${i}`,
  action: 0,
  target: "crm",
  path: "/contacts/1",
  pointer: `/f${i}`,
  masked: false,
  text: `"value ${i}"`,
  ...extra,
});
const form = (fields: EditField[]): EditForm => ({ planId: PLAN_ID, hash: PLAN_HASH, fields });
const where = { channel: "C0REVIEW", reviewUrl: `https://countersign.example/plans/${PLAN_ID}` };
type Input = { type: string; block_id: string; label: { type: string; text: string }; element: { initial_value: string; max_length: number } };
const inputs = (view: ReturnType<typeof editModal>) => (view.blocks as unknown as Input[]).filter((b) => b.type === "input");

describe("the edit dialog", () => {
  it("offers at most 20 values within Slack's limits, leaving secrets, long values and the rest to the plan page, which it links", () => {
    const fields = [
      field(0, { masked: true, text: undefined, pointer: "/apiToken", key: "0:/apiToken" }),
      field(1, { text: JSON.stringify("x".repeat(MODAL_VALUE_CHARS)) }),
      ...Array.from({ length: 30 }, (_, i) => field(i + 2)),
    ];
    const view = editModal(form(fields), where);
    expect(validateView(view as never)).toEqual([]);
    const offered = inputs(view);
    expect(offered).toHaveLength(MODAL_FIELDS);
    expect(offered.map((b) => b.block_id)).toEqual(fields.slice(2, 2 + MODAL_FIELDS).map((f) => f.key));
    expect(offered[0]!.element).toMatchObject({ action_id: "value", initial_value: '"value 2"', max_length: MODAL_VALUE_CHARS });
    expect(JSON.parse(view.private_metadata!)).toEqual({ planId: PLAN_ID, hash: PLAN_HASH, channel: "C0REVIEW" });
    const text = JSON.stringify(view.blocks);
    expect(text).toContain("1 secret value is carried over unchanged");
    expect(text).toContain("11 more values");
    expect(text).toContain(`<${where.reviewUrl}|Open the plan page>`);
    expect(text).not.toContain("tok-");
  });

  it("shows agent text literally: labels are plain text, and a value's text is exactly the JSON stored", () => {
    const hostile = field(0, {
      target: "<!channel>",
      path: "/contacts/<@U0BOSS>",
      pointer: "/note\u202e",
      key: "0:/note\u202e",
      text: '"<!here> *bold* <https://evil.example|prod> \\u202e"',
    });
    const view = editModal(form([hostile]), where);
    expect(validateView(view as never)).toEqual([]);
    const [input] = inputs(view);
    expect(input!.label.type).toBe("plain_text");
    // Shown, but defused as every plain_text is (escape.ts): no token Slack could act on.
    expect(input!.label.text).toContain("<\u2060!channel>");
    expect(input!.label.text).not.toContain("<!channel>");
    expect(input!.label.text).not.toContain("<@U0BOSS>");
    expect(input!.label.text).toContain("⟨U+202E⟩");
    expect(input!.element.initial_value).toBe(hostile.text);
  });

  it("reads a submission: values by field key, and the fields that are not JSON (to keep the dialog open on them)", () => {
    const submitted = editSubmission({
      private_metadata: JSON.stringify({ planId: PLAN_ID, hash: PLAN_HASH, channel: "C0REVIEW" }),
      state: {
        values: { "0:/f1": { value: { value: '"ok@new.example"' } }, "0:/f2": { value: { value: "ok@new.example" } }, "0:/f3": { value: { value: null } } },
      },
    });
    expect(submitted).toEqual({
      meta: { planId: PLAN_ID, hash: PLAN_HASH, channel: "C0REVIEW" },
      values: { "0:/f1": '"ok@new.example"', "0:/f2": "ok@new.example", "0:/f3": "" },
      errors: { "0:/f2": 'not JSON: quote strings ("ok@new.example")', "0:/f3": expect.stringContaining("empty") },
    });
    expect(editSubmission({ private_metadata: "not ours", state: { values: {} } })).toBeUndefined();
  });
});

describe("Edit in the preview and the thread", () => {
  it("a pending plan whose values may be edited has Edit beside Approve and Reject, bound to its hash; others do not", () => {
    expect(buttonIds(planMessage({ editable: true }))).toEqual(["approve", "reject", "edit", "view_full_plan"]);
    expect(blocksJson(planMessage({ editable: true }))).toContain(JSON.stringify(JSON.stringify({ planId: PLAN_ID, hash: PLAN_HASH })).slice(1, -1));
    expect(buttonIds(planMessage({ editable: false }))).toEqual(["approve", "reject", "view_full_plan"]);
    expect(buttonIds(planMessage({ editable: true, status: "approved" }))).not.toContain("edit");
  });

  it("an edited version says whose edit it is; the version it replaced says so and points at it", () => {
    expect(blocksJson(planMessage({ editedBy: "U0BOB" }))).toContain("values edited by <@U0BOB>");
    const old = blocksJson(
      planMessage({ status: "superseded", supersededBy: { hash: PLAN_HASH, reviewUrl: "https://c.example/plans/x", editedBy: { userId: "U0BOB" } } }),
    );
    expect(old).toContain("*Superseded* by <https://c.example/plans/x|version");
    expect(old).toContain("edited by <@U0BOB>");
  });

  it("the thread is told of an edit, and approvers that their approval does not carry over", () => {
    const newer = { hash: PLAN_HASH, reviewUrl: "https://c.example/plans/x" };
    expect(renderThreadReply({ type: "plan.superseded", editedBy: "U0BOB", newer, approvers: ["U0ALICE"] }).text).toMatch(
      /^✏️ Values edited by <@U0BOB>: <https:\/\/c\.example\/plans\/x\|version [0-9a-f]+> replaces this version\n<@U0ALICE>: your approval was for this version and does not carry over/,
    );
    expect(renderThreadReply({ type: "plan.superseded", newer, approvers: ["U0ALICE"] }).text).toMatch(/^↪️ Replaced by/);
  });
});
