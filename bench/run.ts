/**
 * `npm run bench`: measures each figure and prints one line per figure (format in figure.ts).
 * Run: npm run bench [-- help start serve-postgres]   (default: all of them)
 * A figure module exports a FigureSource; add it to SOURCES. Goals are for a quiet machine:
 * run `bench/load.sh` beside it to see how a loaded one fares, never to judge a goal.
 */
import os from "node:os";
import { formatFigure, type FigureSource } from "./figure.ts";
import { help } from "./figures/help.ts";
import { servePostgres } from "./figures/serve-postgres.ts";
import { start } from "./figures/start.ts";

const SOURCES: Record<string, FigureSource> = { help, start, "serve-postgres": servePostgres };

const wanted = process.argv.slice(2);
const chosen = wanted.length === 0 ? Object.entries(SOURCES) : Object.entries(SOURCES).filter(([key]) => wanted.includes(key));
if (chosen.length === 0) {
  console.error(`bench: no figure source named ${wanted.join(", ")}; known: ${Object.keys(SOURCES).join(", ")}`);
  process.exit(2);
}

console.log(`# ${new Date().toISOString()}  node ${process.version}  load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} cores`);
let failed = false;
for (const [, source] of chosen) {
  try {
    for (const figure of await source.measure()) console.log(formatFigure(figure));
  } catch (err) {
    failed = true;
    console.error(`${source.title}: could not be measured: ${(err as Error).message}`);
  }
}
process.exit(failed ? 1 : 0);
