/**
 * What `npm run bench` measures and how it prints it. Two shapes of figure:
 *
 * - An absolute figure with a goal on its value (start-up time, RSS, or a tail over its own median):
 *     name: X unit (goal < G unit | > G unit | ≤ G unit) PASS|FAIL[; baseline LABEL: B unit, ratio R×]
 * - A ratio figure: the product against its floor, measured in the same run in blocks that
 *   alternate product and floor, so noise hits both:
 *     name: product X unit, floor Y unit, ratio Z (goal ≥ G | ≤ G) PASS|FAIL  [spread …; load L]
 *   X and Y are the medians of the blocks; Z is the median of each block pair's ratio (a pair
 *   sees the same load, so its ratio is steadier than either value).
 *
 * Goals are for a quiet machine; a loaded one prints FAIL honestly rather than hiding it.
 */
import type { Pace } from "./blocks.ts";

export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** `atMost` is for a value that is itself a ratio measured in the run, such as a p99 over its own p50. */
  goal: { below: number } | { above: number } | { atMost: number };
  /** Measured in the same run, so the ratio holds on a busy machine where the value alone does not. */
  baseline?: { label: string; value: number };
  /** How it was measured, where that matters to reading it (e.g. "CLI run through tsx"). */
  note?: string;
}

/** The product against its floor: one value of each per block, blocks alternating. */
export interface RatioFigure {
  name: string;
  unit: string;
  product: number[];
  floor: number[];
  /** On product ÷ floor: at least (throughput) or at most (latency). */
  goal: { atLeast: number } | { atMost: number };
  /** Load average (1 min) sampled at each block, for reading the spread. */
  load: number[];
  note?: string;
}

/** A figure that could not be measured here, and why (printed, never silently left out). */
export interface Skipped {
  name: string;
  skipped: string;
}

export type AnyFigure = Figure | RatioFigure | Skipped;

/** A group of figures measured together (one set of processes may yield several). */
export interface FigureSource {
  title: string;
  measure(pace: Pace): Promise<AnyFigure[]>;
}

export function passes(figure: Figure | RatioFigure): boolean {
  if ("product" in figure) {
    const { ratio } = summarize(figure);
    return "atLeast" in figure.goal ? ratio >= figure.goal.atLeast : ratio <= figure.goal.atMost;
  }
  if ("below" in figure.goal) return figure.value < figure.goal.below;
  return "above" in figure.goal ? figure.value > figure.goal.above : figure.value <= figure.goal.atMost;
}

const round = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));
const range = (values: number[], show: (n: number) => string = round) => `${show(Math.min(...values))}–${show(Math.max(...values))}`;

export interface RatioSummary {
  product: number;
  floor: number;
  ratio: number;
  ratios: number[];
}

/** Medians of the blocks, and the median of the pairs' ratios. Refuses unpaired or empty blocks. */
export function summarize(f: RatioFigure): RatioSummary {
  if (f.product.length !== f.floor.length)
    throw new Error(`${f.name}: ${f.product.length} product blocks but ${f.floor.length} floor blocks; blocks come in pairs`);
  const ratios = f.product.map((p, i) => p / f.floor[i]!);
  return { product: median(f.product), floor: median(f.floor), ratio: median(ratios), ratios };
}

export function formatFigure(f: AnyFigure): string {
  if ("skipped" in f) return `${f.name}: skipped (${f.skipped})`;
  if ("product" in f) return formatRatio(f);
  const goal = "below" in f.goal ? `< ${round(f.goal.below)}` : "above" in f.goal ? `> ${round(f.goal.above)}` : `≤ ${round(f.goal.atMost)}`;
  let line = `${f.name}: ${round(f.value)} ${f.unit} (goal ${goal} ${f.unit}) ${passes(f) ? "PASS" : "FAIL"}`;
  if (f.baseline) line += `; baseline ${f.baseline.label}: ${round(f.baseline.value)} ${f.unit}, ratio ${(f.value / f.baseline.value).toFixed(1)}×`;
  if (f.note) line += `  [${f.note}]`;
  return line;
}

function formatRatio(f: RatioFigure): string {
  const s = summarize(f);
  const goal = "atLeast" in f.goal ? `≥ ${f.goal.atLeast.toFixed(2)}` : `≤ ${f.goal.atMost.toFixed(2)}`;
  const spread = `spread: ratio ${range(s.ratios, (n) => n.toFixed(2))}, product ${range(f.product)}, floor ${range(f.floor)} over ${f.product.length} blocks; load ${range(f.load, (n) => n.toFixed(1))}`;
  return `${f.name}: product ${round(s.product)} ${f.unit}, floor ${round(s.floor)} ${f.unit}, ratio ${s.ratio.toFixed(2)} (goal ${goal}) ${passes(f) ? "PASS" : "FAIL"}  [${spread}${f.note ? `; ${f.note}` : ""}]`;
}

export function median(values: number[]): number {
  if (values.length === 0) throw new Error("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0–100): the smallest value with at least p % of the values at or below it. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) throw new Error("percentile of no values");
  if (!(p > 0 && p <= 100)) throw new Error(`percentile must be in (0, 100], got ${p}`);
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
}
