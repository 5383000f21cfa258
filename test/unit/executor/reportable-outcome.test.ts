import { describe, expect, it } from "vitest";
import { minimalOutcome, reportableOutcome } from "../../../src/executor/reportable-outcome.ts";
import { findTooDeep } from "../../../src/plan/json.ts";
import type { Json } from "../../../src/plan/json.ts";
import { Outcome } from "../../../src/plan/outcome.ts";
import { LIMITS } from "../../../src/plan/schema.ts";
import { findUnstorable } from "../../../src/plan/storable.ts";

function deep(levels: number): Json {
  let value: Json = "bottom";
  for (let i = 0; i < levels; i++) value = { next: value };
  return value;
}

const hostile: Outcome = {
  status: "stale",
  reason: "x".repeat(5000) + "\uD800",
  actions: [
    {
      index: 0,
      target: "crm",
      path: "/c/1",
      status: "stale",
      detail: "nul \u0000 here",
      expected: "etag-1",
      now: "\uDC00",
      changedSincePreview: [{ path: "/name\uD800", from: deep(60), to: { ["k\u0000"]: ["\uD83D"] } }],
    },
  ],
};

describe("reportableOutcome", () => {
  it("turns an outcome the server would refuse into one it accepts", () => {
    expect(Outcome.safeParse(hostile).success).toBe(false);
    const report = reportableOutcome(hostile);
    expect(Outcome.safeParse(report).success).toBe(true);
    expect(findUnstorable(report)).toEqual([]);
    expect(findTooDeep(report, LIMITS.maxDepth)).toBeUndefined();
  });

  it("keeps what was done and where", () => {
    const report = reportableOutcome(hostile);
    expect(report.status).toBe("stale");
    expect(report.actions[0]).toMatchObject({
      index: 0,
      target: "crm",
      path: "/c/1",
      status: "stale",
      expected: "etag-1",
      now: "\uFFFD",
      detail: "nul \uFFFD here",
    });
    expect(report.actions[0]!.changedSincePreview![0]!.to).toEqual({ "k\uFFFD": ["\uFFFD"] });
  });

  it("makes a drift report from the target storable too: deep and unstorable actual values", () => {
    const drifted: Outcome = {
      status: "applied",
      actions: [
        {
          index: 0,
          target: "crm",
          path: "/c/1",
          status: "applied",
          verified: false,
          driftAfterApply: [{ path: "/a\uD800", expected: "ok", actual: { deep: deep(60), ["k\u0000"]: "\uDC00" } }],
        },
      ],
    };
    expect(findUnstorable(drifted)).not.toEqual([]);
    expect(findTooDeep(drifted, LIMITS.maxDepth)).toBeDefined();
    const report = reportableOutcome(drifted);
    expect(Outcome.safeParse(report).success).toBe(true);
    expect(findUnstorable(report)).toEqual([]);
    expect(findTooDeep(report, LIMITS.maxDepth)).toBeUndefined();
    expect(report.actions[0]).toMatchObject({
      status: "applied",
      verified: false,
      driftAfterApply: [{ path: "/a\uFFFD", expected: "ok", actual: { "k\uFFFD": "\uFFFD" } }],
    });
  });

  it("leaves an ordinary outcome as it is", () => {
    const ordinary: Outcome = { status: "applied", actions: [{ index: 0, target: "crm", path: "/c/1", status: "applied" }] };
    expect(reportableOutcome(ordinary)).toEqual(ordinary);
  });
});

describe("minimalOutcome", () => {
  it("keeps status, partial and per-action status, and says why detail is missing", () => {
    const partial: Outcome = {
      status: "failed",
      partial: true,
      reason: "action 1 failed",
      actions: [
        { index: 0, target: "a", path: "/x", status: "applied" },
        { index: 1, target: "a", path: "/y", status: "failed", detail: "boom" },
      ],
    };
    const minimal = minimalOutcome(partial, "HTTP 400: too big");
    expect(minimal).toEqual({
      status: "failed",
      partial: true,
      reason: "action 1 failed (the server refused the full report: HTTP 400: too big)",
      actions: [
        { index: 0, target: "a", path: "/x", status: "applied" },
        { index: 1, target: "a", path: "/y", status: "failed" },
      ],
    });
    expect(Outcome.safeParse(minimal).success).toBe(true);
  });

  it("keeps whether each write verified: a write that did not land must not read as a clean apply", () => {
    const drifted: Outcome = {
      status: "applied",
      actions: [
        { index: 0, target: "a", path: "/x", status: "applied", verified: false, driftAfterApply: [{ path: "/n", expected: 1 }] },
        { index: 1, target: "a", path: "/y", status: "applied", verified: null, detail: "could not re-read after the write" },
      ],
    };
    expect(minimalOutcome(drifted, "HTTP 400").actions).toEqual([
      { index: 0, target: "a", path: "/x", status: "applied", verified: false },
      { index: 1, target: "a", path: "/y", status: "applied", verified: null },
    ]);
  });
});
