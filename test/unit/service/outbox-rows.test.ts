import { describe, expect, it } from "vitest";
import { HOME_EVENTS, HOME_SINK } from "../../../src/service/records/home-events.ts";
import { outboxRowsOf } from "../../../src/service/records/outbox.ts";
import type { ServiceContext } from "../../../src/service/context.ts";

const ctx = {
  sinks: ["slack", HOME_SINK, "webhook"],
  config: { targets: { crm: {} }, slack: { enabled: true, reviewChannel: "C0REVIEW" } },
} as unknown as Pick<ServiceContext, "sinks" | "config">;
const plan = {
  id: "6f1c0a52-3a77-4b3e-9f5e-2d3c4b5a6e7f",
  hash: "sha256:abc",
  callbackUrl: "https://agent.example/hook",
  document: { agent: "deploy-bot", actions: [{ target: "crm" }] },
};
const event = (type: string, status = "pending") => ({ type, status, at: "2026-12-04T12:00:00.000Z", actor: { type: "system" }, data: {} });
const kinds = (type: string, status?: string) => outboxRowsOf(ctx, plan, event(type, status)).map((r) => r.kind);

describe("an event's outbox rows", () => {
  it("queue a Home row for every event that changes what a Home shows, including a plan leaving pending undecided", () => {
    for (const type of [
      "plan.submitted",
      "decision.approve",
      "plan.approved",
      "plan.rejected",
      "plan.expired",
      "plan.cancelled",
      "plan.stale",
      "plan.superseded",
    ]) {
      expect(kinds(type)).toEqual(["slack", HOME_SINK, "webhook"]);
    }
  });

  it("queue none for the rest of a plan's life, which no Home lists", () => {
    for (const type of ["plan.executing", "plan.applied", "plan.failed", "plan.reminder", "plan.reclaimed", "plan.revoked"]) {
      expect(HOME_EVENTS.has(type)).toBe(false);
      expect(kinds(type, "executing")).toEqual(["slack", "webhook"]);
    }
  });
});
