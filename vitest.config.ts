import { configDefaults, defineConfig } from "vitest/config";
import { LongestFirstSequencer } from "./test/support/sequencer.ts";
import { suites } from "./test/support/suites.ts";

/** What both scripts share; vitest.slow.config.ts runs test/slow/ with the same settings. */
export const shared = {
  globalSetup: ["test/support/global-setup.ts"],
  // Bounds, not expectations: on a loaded 2-core machine (load average 8) a spawned process
  // or a fresh embedded database takes several times what it takes on a quiet one. Tests wait
  // on conditions, so a passing test never waits for these.
  testTimeout: 120_000,
  hookTimeout: 180_000,
  pool: "forks" as const,
  // Two cores here; PGlite instances are large. More workers only thrash.
  maxWorkers: 2,
  // The longest files first, so both workers end together (test/support/sequencer.ts).
  sequence: { sequencer: LongestFirstSequencer },
};

/** `npm test`: every test file but the slow scenarios in test/slow/ (`npm run test:slow`). */
export default defineConfig({
  test: {
    ...shared,
    // A worker runs file after file in one process, importing the server and its packages once
    // instead of once per file: the whole suite took 395 s of CPU isolated, 259 s not (import
    // 182 s → 56 s summed over files; docs/notes/test-harness.md). So a file must leave nothing
    // behind that the next could trip on: close what it opens (useHarness/useServer do), keep
    // module state keyed by what it belongs to (a Database, a request), restore process.env.
    isolate: false,
    include: suites.fast.include,
    exclude: [...configDefaults.exclude, ...suites.fast.exclude],
  },
});
