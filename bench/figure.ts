/**
 * One measured figure and how `npm run bench` prints it:
 *   name: X unit (goal < G unit) PASS|FAIL[; baseline LABEL: B unit, ratio R×]
 * Goals are for a quiet machine; a loaded one prints FAIL honestly rather than hiding it.
 */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  goal: { below: number } | { above: number };
  /** Measured in the same run, so the ratio holds on a busy machine where the value alone does not. */
  baseline?: { label: string; value: number };
  /** How it was measured, where that matters to reading it (e.g. "CLI run through tsx"). */
  note?: string;
}

/** A figure that could not be measured here, and why (printed, never silently left out). */
export interface Skipped {
  name: string;
  skipped: string;
}

/** A group of figures measured together (one set of processes may yield several). */
export interface FigureSource {
  title: string;
  measure(): Promise<(Figure | Skipped)[]>;
}

export function passes(figure: Figure): boolean {
  return "below" in figure.goal ? figure.value < figure.goal.below : figure.value > figure.goal.above;
}

const round = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));

export function formatFigure(f: Figure | Skipped): string {
  if ("skipped" in f) return `${f.name}: skipped (${f.skipped})`;
  const goal = "below" in f.goal ? `< ${round(f.goal.below)}` : `> ${round(f.goal.above)}`;
  let line = `${f.name}: ${round(f.value)} ${f.unit} (goal ${goal} ${f.unit}) ${passes(f) ? "PASS" : "FAIL"}`;
  if (f.baseline) line += `; baseline ${f.baseline.label}: ${round(f.baseline.value)} ${f.unit}, ratio ${(f.value / f.baseline.value).toFixed(1)}×`;
  if (f.note) line += `  [${f.note}]`;
  return line;
}

export function median(values: number[]): number {
  if (values.length === 0) throw new Error("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
