import { describe, expect, it } from "vitest";
import { HOME_SINK } from "../../../src/service/records/home-events.ts";
import { laneIsOf, laneOf, NOTICE_SINK, noticeLaneOf, priorityOf, sinkLane, type LaneConfig } from "../../../src/service/records/outbox-lanes.ts";

const config = {
  targets: { crm: { policy: { reviewChannel: "C0CRM" } } },
  slack: { enabled: true, reviewChannel: "C0REVIEW" },
} as unknown as LaneConfig;
const doc = (target: string) => ({ agent: "deploy-bot", actions: [{ target }] }) as never;

describe("outbox lanes", () => {
  it("puts Slack rows in their review channel's lane and webhooks in their agent's", () => {
    expect(laneOf(config, "slack", doc("crm"))).toBe("slack:C0CRM");
    expect(laneOf(config, "slack", doc("other"))).toBe("slack:C0REVIEW");
    expect(laneOf(config, "webhook", doc("crm"))).toBe("webhook:deploy-bot");
  });

  it("gives a one-lane sink the lane and priority every one of its rows is written with", () => {
    const home = sinkLane(HOME_SINK);
    for (const event of ["plan.submitted", "decision.approve", "plan.expired"]) {
      expect(laneOf(config, HOME_SINK, doc("crm"))).toBe(home.lane);
      expect(priorityOf(HOME_SINK, event)).toBe(home.priority);
    }
    expect(home).toEqual({ lane: "slack_home", priority: 1 });
  });

  it("refuses to name one lane for the sinks whose lanes are per channel or per agent (the kill switch's notices too)", () => {
    expect(() => sinkLane("slack")).toThrow(/a lane per channel/);
    expect(() => sinkLane("webhook")).toThrow(/a lane per agent/);
    expect(() => sinkLane(NOTICE_SINK)).toThrow(/a lane per channel/);
  });

  it("puts the kill switch's notices in a lane per channel, which the notice sink drains", () => {
    expect(noticeLaneOf("C0REVIEW")).toBe("slack_notice:C0REVIEW");
    expect(laneIsOf(noticeLaneOf("C0REVIEW"), NOTICE_SINK)).toBe(true);
  });
});
