import { configDefaults, defineConfig } from "vitest/config";
import { suites } from "./test/support/suites.ts";
import { shared } from "./vitest.config.ts";

/** `npm run test:slow`: the slow real-process scenarios in test/slow/ (see test/support/suites.ts). */
export default defineConfig({
  test: {
    ...shared,
    include: suites.slow.include,
    exclude: [...configDefaults.exclude, ...suites.slow.exclude],
  },
});
