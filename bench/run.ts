/**
 * `npm run bench`: measures each figure and prints one line per figure (format in figure.ts).
 * Run: npm run bench [-- [--quick] [--product DIR] [figure …]]   (default: every figure)
 *   --quick        3 short block pairs, a 100 k seed instead of 1 M, 10 approvals instead of 100
 *                  behind approve_to_applied_seen_by_agent, and no volume scenario unless named:
 *                  a smoke run whose ratios are rough
 *   --product DIR  measure the Countersign built in DIR (its dist/cli.js), e.g. a worktree of an
 *                  older commit; the harness and the floors stay this checkout's
 * A figure module exports a FigureSource; add it to SOURCES. Each figure's goal sits beside it in
 * bench/figures/ and prints on its line. Goals are for a quiet machine: run `bench/load.sh` beside
 * it to see how a loaded one fares, never to judge a goal.
 */
import os from "node:os";
import { pace } from "./blocks.ts";
import { formatFigure, type FigureSource } from "./figure.ts";
import { approveToPatch } from "./figures/approve-to-patch.ts";
import { clickAck } from "./figures/click-ack.ts";
import { help } from "./figures/help.ts";
import { intakeAtScale } from "./figures/intake-at-scale.ts";
import { intake } from "./figures/intake.ts";
import { servePostgres } from "./figures/serve-postgres.ts";
import { start } from "./figures/start.ts";
import { volume } from "./figures/volume.ts";
import { productDir, useProduct } from "./processes.ts";

const SOURCES: Record<string, FigureSource> = {
  help,
  start,
  "serve-postgres": servePostgres,
  intake,
  "approve-to-patch": approveToPatch,
  "click-ack": clickAck,
  "intake-at-scale": intakeAtScale,
  volume,
};

const args = process.argv.slice(2);
const wanted: string[] = [];
let quick = false;
for (let i = 0; i < args.length; i++) {
  const arg = args[i]!;
  if (arg === "--quick") quick = true;
  else if (arg === "--product") {
    const dir = args[++i];
    if (!dir) usage("--product needs a directory");
    try {
      useProduct(dir!);
    } catch (err) {
      usage((err as Error).message);
    }
  } else if (arg.startsWith("-")) usage(`unknown option ${arg}`);
  else wanted.push(arg);
}
const unknown = wanted.filter((name) => !(name in SOURCES));
if (unknown.length > 0) usage(`no figure source named ${unknown.join(", ")}`);
/** Figures that take minutes by definition: left out of a --quick run unless named. */
const SLOW = new Set(["volume"]);
const chosen =
  wanted.length === 0 ? Object.entries(SOURCES).filter(([key]) => !(quick && SLOW.has(key))) : Object.entries(SOURCES).filter(([key]) => wanted.includes(key));

function usage(problem: string): never {
  console.error(`bench: ${problem}\nusage: npm run bench -- [--quick] [--product DIR] [figure …]; figures: ${Object.keys(SOURCES).join(", ")}`);
  process.exit(2);
}

console.log(
  `# ${new Date().toISOString()}  node ${process.version}  load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${os.availableParallelism()} cores  product ${productDir()}${quick ? "  --quick" : ""}`,
);
let failed = false;
const began = performance.now();
for (const [key, source] of chosen) {
  const started = performance.now();
  try {
    for (const figure of await source.measure(pace(quick))) console.log(formatFigure(figure));
    console.log(`# ${key}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } catch (err) {
    failed = true;
    console.error(`${source.title}: could not be measured: ${(err as Error).stack ?? (err as Error).message}`);
  }
}
console.log(`# all figures: ${((performance.now() - began) / 1000).toFixed(0)} s`);
process.exit(failed ? 1 : 0);
