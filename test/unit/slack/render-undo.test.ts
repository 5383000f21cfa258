import { describe, expect, it } from "vitest";
import { renderThreadReply, SLACK_LIMITS } from "../../../src/slack/render.ts";
import { blocksJson, buttonIds, planMessage } from "../../support/plan-fixtures.ts";

const UNDO = { hash: `sha256:${"0123456789abcdef".repeat(4)}`, reviewUrl: "https://countersign.example/plans/undo" };
const ORIGINAL = { hash: `sha256:${"fedcba9876543210".repeat(4)}`, reviewUrl: "https://countersign.example/plans/original" };

describe("undo on the Slack message", () => {
  it("an applied plan that can be taken back has Propose undo, with a confirm dialog; once taken back it says by which plan and the button goes", () => {
    const applied = planMessage({ status: "applied", undoable: true });
    expect(buttonIds(applied)).toEqual(["propose_undo", "view_full_plan"]);
    expect(blocksJson(applied)).toContain('"title":{"type":"plain_text","text":"Propose an undo?"');
    expect(buttonIds(planMessage({ status: "applied" }))).toEqual(["view_full_plan"]);
    const taken = planMessage({ status: "applied", undoneBy: UNDO });
    expect(buttonIds(taken)).toEqual(["view_full_plan"]);
    expect(blocksJson(taken)).toContain("↩️ Taken back by <https://countersign.example/plans/undo|version 0123456789ab>");
  });

  it("the undo's preview links the plan it takes back and names who asked, as a mention; it keeps its decision buttons", () => {
    const undo = planMessage({ undoes: ORIGINAL, askedBy: "U0BOB" });
    expect(blocksJson(undo)).toContain("↩️ Undoes <https://countersign.example/plans/original|version fedcba987654>, asked by <@U0BOB>");
    expect(buttonIds(undo)).toContain("approve");
    // An id that is not a user id is never turned into a mention.
    expect(blocksJson(planMessage({ undoes: ORIGINAL, askedBy: "<!channel>" }))).not.toContain("<!channel>");
  });

  it("the plan's thread hears of the undo when it is asked for and when it is applied; an agent's name is shown literally", () => {
    const byPerson = renderThreadReply({ type: "undo.proposed", undo: UNDO, askedBy: "U0BOB" });
    expect(byPerson.text).toBe(
      "↩️ Undo proposed by <@U0BOB>: <https://countersign.example/plans/undo|version 0123456789ab> restores what this plan changed, once approved",
    );
    const byAgent = renderThreadReply({ type: "undo.proposed", undo: UNDO, agent: "*bot* <!here>" });
    expect(byAgent.text).not.toContain("<!here>");
    expect(byAgent.text.length).toBeLessThanOrEqual(SLACK_LIMITS.messageText);
    expect(renderThreadReply({ type: "undo.applied", undo: UNDO }).text).toMatch(
      /^↩️ Taken back: <https:\/\/countersign\.example\/plans\/undo\|version 0123456789ab> was applied/,
    );
  });
});
