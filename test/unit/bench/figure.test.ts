import { describe, expect, it } from "vitest";
import { formatFigure, median, passes, percentile, summarize, type RatioFigure } from "../../../bench/figure.ts";

describe("bench figures", () => {
  it("prints name, value, unit, goal and PASS when under an upper goal", () => {
    expect(formatFigure({ name: "start_total_rss_mb", value: 311.4, unit: "MB", goal: { below: 350 } })).toBe(
      "start_total_rss_mb: 311 MB (goal < 350 MB) PASS",
    );
  });

  it("prints FAIL at or over the goal, and the ratio against a baseline measured in the same run", () => {
    const line = formatFigure({ name: "help_seconds", value: 0.5, unit: "s", goal: { below: 0.5 }, baseline: { label: "node -e 0", value: 0.04 } });
    expect(line).toBe("help_seconds: 0.50 s (goal < 0.50 s) FAIL; baseline node -e 0: 0.04 s, ratio 12.5×");
  });

  it("knows goals to exceed (throughput), and names a figure that could not be measured", () => {
    expect(passes({ name: "plans_per_second", value: 120, unit: "/s", goal: { above: 100 } })).toBe(true);
    expect(passes({ name: "plans_per_second", value: 80, unit: "/s", goal: { above: 100 } })).toBe(false);
    expect(formatFigure({ name: "serve_idle_rss_mb_postgres", skipped: "set BENCH_DATABASE_URL" })).toBe(
      "serve_idle_rss_mb_postgres: skipped (set BENCH_DATABASE_URL)",
    );
  });

  it("takes the median of odd and even counts, and refuses none", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow("median of no values");
  });

  it("takes nearest-rank percentiles: p99 of 50 values is the largest, p50 the 25th", () => {
    const values = Array.from({ length: 50 }, (_, i) => 50 - i); // 50 … 1, unsorted on purpose
    expect(percentile(values, 99)).toBe(50);
    expect(percentile(values, 50)).toBe(25);
    expect(percentile([7], 1)).toBe(7);
    expect(() => percentile([], 50)).toThrow("percentile of no values");
    expect(() => percentile([1], 0)).toThrow("percentile must be in (0, 100], got 0");
  });
});

describe("ratio figures (product against its floor, blocks alternating)", () => {
  const intake: RatioFigure = {
    name: "intake_8_in_flight",
    unit: "plans/s",
    product: [80, 90, 86],
    floor: [600, 700, 640],
    load: [2.1, 2.6, 2.4],
    goal: { atLeast: 0.6 },
  };

  it("prints the medians, the median of the pairs' ratios, the goal and the spread with the load", () => {
    expect(formatFigure(intake)).toBe(
      "intake_8_in_flight: product 86.0 plans/s, floor 640 plans/s, ratio 0.13 (goal ≥ 0.60) FAIL  [spread: ratio 0.13–0.13, product 80.0–90.0, floor 600–700 over 3 blocks; load 2.1–2.6]",
    );
  });

  it("takes the ratio pair by pair, so a block that hit load on both sides does not skew it", () => {
    // Pairs: 10/5 = 2, 40/20 = 2, 12/4 = 3 → median 2, while the medians alone give 12/5 = 2.4.
    const s = summarize({ name: "x", unit: "ms", product: [10, 40, 12], floor: [5, 20, 4], load: [1, 1, 1], goal: { atMost: 3 } });
    expect(s).toEqual({ product: 12, floor: 5, ratio: 2, ratios: [2, 2, 3] });
  });

  it("passes an upper goal at the goal itself, a lower goal at or above it, and notes how it was measured", () => {
    const latency: RatioFigure = { name: "approve_to_patch_p50", unit: "ms", product: [15], floor: [5], load: [1], goal: { atMost: 3 }, note: "1 click" };
    expect(passes(latency)).toBe(true);
    expect(formatFigure(latency)).toBe(
      "approve_to_patch_p50: product 15.0 ms, floor 5.00 ms, ratio 3.00 (goal ≤ 3.00) PASS  [spread: ratio 3.00–3.00, product 15.0–15.0, floor 5.00–5.00 over 1 blocks; load 1.0–1.0; 1 click]",
    );
    expect(passes({ ...latency, product: [15.5] })).toBe(false);
    expect(passes({ ...intake, product: [384, 420, 400] })).toBe(true);
  });

  it("refuses blocks that do not pair up", () => {
    expect(() => summarize({ ...intake, floor: [600] })).toThrow("intake_8_in_flight: 3 product blocks but 1 floor blocks; blocks come in pairs");
  });
});
