import { describe, expect, it } from "vitest";
import { blocksJson, buttonIds, planMessage } from "../../support/plan-fixtures.ts";

describe("drift on the Slack message (issue 15)", () => {
  const stale = planMessage({
    status: "stale",
    outcome: {
      status: "stale",
      actions: [
        {
          index: 0,
          target: "crm",
          path: "/contacts/1",
          status: "stale",
          expected: '"1"',
          now: '"2"',
          changedSincePreview: [
            { path: "/email", from: "a@old.example", to: "b@other.example" },
            { path: "/name", from: "Ana", to: "Ana L." },
          ],
        },
      ],
    },
  });

  it("a stale plan loses its decision buttons and says what changed since the preview", () => {
    expect(buttonIds(planMessage())).toContain("approve");
    expect(buttonIds(stale)).not.toContain("approve");
    expect(buttonIds(stale)).not.toContain("reject");
    expect(blocksJson(stale)).toContain('`/email` is now `\\"b@other.example\\"`, was `\\"a@old.example\\"` when you were asked (and 1 more change)');
  });

  it("an open plan whose target cannot be re-read says since when, in the context line", () => {
    expect(blocksJson(planMessage())).not.toContain("Could not re-check");
    const failing = planMessage({ watch: { checkedAt: null, failingSince: "2026-05-01T11:40:00.000Z" } });
    expect(blocksJson(failing)).toContain("Could not re-check the target since <!date^1777635600^{time}|2026-05-01T11:40:00Z>");
    // A final plan no longer shows it.
    expect(blocksJson({ ...failing, status: "rejected" })).not.toContain("Could not re-check");
  });

  it("an approval recorded without a re-check is marked so", () => {
    const approved = planMessage({
      status: "approved",
      approvals: [{ userId: "UALICE01", via: "slack", at: "2026-05-01T11:00:00Z", recheckFailed: "could not re-check: target 'crm' answered HTTP 503" }],
    });
    expect(blocksJson(approved)).toContain("Approved without a re-check by <@UALICE01>");
    expect(blocksJson(planMessage({ status: "approved", approvals: [{ userId: "UALICE01", via: "slack", at: "2026-05-01T11:00:00Z" }] }))).not.toContain(
      "without a re-check",
    );
  });
});
