import { describe, expect, it } from "vitest";
import { parseDelegateCommand, type DelegateCommand } from "../../../src/slack/delegate-command.ts";

describe("/countersign delegate …", () => {
  it.each<[text: string, expected: DelegateCommand]>([
    ["delegate <@U024BE7LH|bob> until 2026-12-20", { verb: "create", delegate: "U024BE7LH", until: "2026-12-20" }],
    ["delegate <@U024BE7LH> until 2026-12-20", { verb: "create", delegate: "U024BE7LH", until: "2026-12-20" }],
    ["delegate <@W0ENTERPRISE|Bob Stone> until 2026-12-20", { verb: "create", delegate: "W0ENTERPRISE", until: "2026-12-20" }],
    ["delegate U024BE7LH until 2026-12-20", { verb: "create", delegate: "U024BE7LH", until: "2026-12-20" }],
    ["  delegate   <@U024BE7LH|bob>   until   2026-12-20  ", { verb: "create", delegate: "U024BE7LH", until: "2026-12-20" }],
    ["delegate <@U024BE7LH|bob> until 2026-12-20 target crm", { verb: "create", delegate: "U024BE7LH", until: "2026-12-20", targets: ["crm"] }],
    [
      "delegate <@U024BE7LH|bob> until 2026-12-20 targets crm billing",
      { verb: "create", delegate: "U024BE7LH", until: "2026-12-20", targets: ["crm", "billing"] },
    ],
    // The date is the service's to judge (it knows the delegator's time zone).
    ["delegate <@U024BE7LH|bob> until tomorrow", { verb: "create", delegate: "U024BE7LH", until: "tomorrow" }],
    ["delegate list", { verb: "list" }],
    ["delegate end 6f1c7f1e-4a1b-4c1d-8e1f-0a1b2c3d4e5f", { verb: "end", id: "6f1c7f1e-4a1b-4c1d-8e1f-0a1b2c3d4e5f" }],
    ["delegate", { verb: "help" }],
    ["delegate help", { verb: "help" }],
  ])("%s", (text, expected) => {
    expect(parseDelegateCommand(text)).toEqual(expected);
  });

  it.each<[text: string, says: RegExp]>([
    ["delegate @bob until 2026-12-20", /"@bob" is not a mention Slack resolved: pick the person from the list Slack offers/],
    ["delegate bob until 2026-12-20", /"bob" is not a person/],
    ["delegate <!channel> until 2026-12-20", /"<!channel>" is not a person/],
    ["delegate <@U024BE7LH|bob>", /say until when/],
    ["delegate <@U024BE7LH|bob> 2026-12-20", /say until when/],
    ["delegate <@U024BE7LH|bob> until 2026-12-20 crm", /only `target NAME…` may follow/],
    ["delegate <@U024BE7LH|bob> until 2026-12-20 target", /only `target NAME…` may follow/],
    ["delegate end", /name the delegation to end/],
    ["delegate list everything", /takes nothing after it/],
  ])("refuses %s", (text, says) => {
    const parsed = parseDelegateCommand(text);
    expect(parsed.verb).toBe("help");
    expect(parsed.verb === "help" && parsed.problem).toMatch(says);
  });
});
