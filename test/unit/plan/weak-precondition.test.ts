import { describe, expect, it } from "vitest";
import { weakPrecondition } from "../../../src/plan/weak-precondition.ts";
import { blocksJson, planMessage } from "../../support/plan-fixtures.ts";

// A postgres.row update on a table with and without a version column.
const rowAction = (precondition: string, version: string) => ({
  target: "crmdb",
  path: "/contacts/42",
  op: "update",
  precondition,
  version,
  before: { email: "a@old.example" },
  after: { email: "a@new.example" },
  changes: [{ path: "/email", from: "a@old.example", to: "a@new.example" }],
});

describe("weakPrecondition: one rule for which preconditions a reviewer is warned about", () => {
  it("names digest and xmin with why, and nothing else", () => {
    expect(weakPrecondition("digest")?.why).toContain("cannot refuse a racing write");
    expect(weakPrecondition("xmin")?.why).toContain("dump and restore");
    for (const strong of ["etag", "version", "absent", undefined]) expect(weakPrecondition(strong)).toBeUndefined();
  });

  it("Slack's preview warns of an xmin version and not of a version column", () => {
    const xmin = blocksJson(planMessage({ actions: [rowAction("xmin", "48213")] }));
    expect(xmin).toContain("48213");
    expect(xmin).toContain("⚠ xmin");
    const column = blocksJson(planMessage({ actions: [rowAction("version", "2026-05-01 12:00:00.123456+00")] }));
    expect(column).toContain("2026-05-01 12:00:00.123456+00");
    expect(column).not.toContain("⚠");
  });
});
