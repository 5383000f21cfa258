import { describe, expect, it } from "vitest";
import { formatFigure, median, passes } from "../../../bench/figure.ts";

describe("bench figures", () => {
  it("prints name, value, unit, goal and PASS when under an upper goal", () => {
    expect(formatFigure({ name: "start_total_rss_mb", value: 311.4, unit: "MB", goal: { below: 350 } })).toBe("start_total_rss_mb: 311 MB (goal < 350 MB) PASS");
  });

  it("prints FAIL at or over the goal, and the ratio against a baseline measured in the same run", () => {
    const line = formatFigure({ name: "help_seconds", value: 0.5, unit: "s", goal: { below: 0.5 }, baseline: { label: "node -e 0", value: 0.04 } });
    expect(line).toBe("help_seconds: 0.50 s (goal < 0.50 s) FAIL; baseline node -e 0: 0.04 s, ratio 12.5×");
  });

  it("knows goals to exceed (throughput), and names a figure that could not be measured", () => {
    expect(passes({ name: "plans_per_second", value: 120, unit: "/s", goal: { above: 100 } })).toBe(true);
    expect(passes({ name: "plans_per_second", value: 80, unit: "/s", goal: { above: 100 } })).toBe(false);
    expect(formatFigure({ name: "serve_idle_rss_mb_postgres", skipped: "set BENCH_DATABASE_URL" })).toBe("serve_idle_rss_mb_postgres: skipped (set BENCH_DATABASE_URL)");
  });

  it("takes the median of odd and even counts, and refuses none", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow("median of no values");
  });
});
