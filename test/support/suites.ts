/**
 * Which test files each script runs. `npm test` (vitest.config.ts) runs everything but
 * test/slow/; `npm run test:slow` (vitest.slow.config.ts) runs test/slow/ only, and `.ci/run`
 * runs both. test/slow/ holds real-process scenarios that repeat what `npm test` already covers
 * at a smaller scale or through the other door, and that together cost more time than the rest
 * (see DEVELOPERS.md, "Tests"). test/unit/build/test-suites.test.ts checks that every *.test.ts is
 * in exactly one of the two.
 */
export const SLOW_DIR = "test/slow";

export interface Suite {
  include: string[];
  exclude: string[];
}

export const suites: Record<"fast" | "slow", Suite> = {
  fast: { include: ["test/**/*.test.ts"], exclude: [`${SLOW_DIR}/**`] },
  slow: { include: [`${SLOW_DIR}/**/*.test.ts`], exclude: [] },
};
