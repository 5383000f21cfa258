import { configDefaults, defineConfig } from "vitest/config";
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
};

/** `npm test`: every test file but the slow scenarios in test/slow/ (`npm run test:slow`). */
export default defineConfig({
  test: {
    ...shared,
    include: suites.fast.include,
    exclude: [...configDefaults.exclude, ...suites.fast.exclude],
  },
});
