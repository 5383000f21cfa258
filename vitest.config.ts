import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Bounds, not expectations: on a loaded 2-core machine (load average 8) a spawned process
    // or a fresh embedded database takes several times what it takes on a quiet one. Tests wait
    // on conditions, so a passing test never waits for these.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: "forks",
    // Two cores here; PGlite instances are large. More workers only thrash.
    maxWorkers: 2,
  },
});
