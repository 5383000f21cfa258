/**
 * Which test files each script runs. `npm test` (vitest.config.ts) runs everything but
 * test/slow/; `npm run test:slow` (vitest.slow.config.ts) runs test/slow/ only, and `.ci/run`
 * runs both. test/slow/ holds the scenarios of several real processes (servers, executors,
 * restarts, browsers) and those that repeat what `npm test` covers at a larger scale or through
 * the other door, so that `npm test` stays under five minutes on a quiet machine
 * (see docs/notes/test-harness.md). test/unit/build/test-suites.test.ts checks that every *.test.ts is
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

/**
 * The longest files, longest first: test/support/sequencer.ts starts them before the rest, so
 * the two workers end together instead of one running a long file alone at the end (vitest
 * would order a fresh clone by file size, and the longest file here is 9 lines). Seconds are
 * one whole `npm test` at load 12 (and at load 23; docs/notes/test-harness.md); a file that grows
 * past ~15 s belongs here. test/unit/build/test-suites.test.ts checks each entry names a file.
 */
export const LONGEST_FIRST = [
  "test/e2e/slack.test.ts", // 68 s (68 s at load 23)
  "test/integration/scenarios/fuzz-requests.test.ts", // 47 s (212 s)
  "test/slow/cli.test.ts", // 43 s (247 s)
  "test/e2e/built-slack-door.test.ts", // 38 s (67 s)
  "test/integration/audit/audit-verify.test.ts", // 33 s (125 s)
  "test/integration/audit/audit-seal-signatures.test.ts", // 46–55 s run alone at load 14–19 (not yet timed in a whole run)
  "test/e2e/slack-socket-mode.test.ts", // 29 s (12 s)
  "test/slow/client-package.test.ts", // 25 s (97 s)
  "test/e2e/lazy-commands.test.ts", // 25 s (36 s)
  "test/integration/store/pglite-template.test.ts", // 24 s (14 s)
  "test/e2e/agent-doors-postgres-row.test.ts", // 6-15 s alone at load 5-8 (a database with roles, the server, an MCP child, the executor)
  "test/slow/postgres-row-sessions.test.ts", // 26 s run alone at load 12 (lost answers waited out, one for timeoutMs + 5 s)
  "test/e2e/postgres-row-submit.test.ts", // 19 s run alone at load ~15 (a database with roles, the server, the first catalogue reads)
  "test/slow/start-postgres-row.test.ts", // 12 s alone at load 11, 21-42 s at load 15-18 (five `start`s, one on PGlite)
  "test/integration/demo/postgres-row-demo-provision.test.ts", // 19 s alone at load ~10 (a private cluster: initdb, start, pg_hba reload)
  "test/integration/undo/propose-undo.test.ts", // 17 s run alone at load 10-14, both databases (ten plans applied and taken back in-process)
  "test/e2e/undo.test.ts", // 14-22 s run alone at load 8-9 (a server, the Slack emulator, two applies in-process)
  "test/e2e/edit.test.ts", // 16-20 s alone at load 9 (the server, Slack over HTTP, an executor, Chromium)
  "test/slow/fuzz-requests.test.ts",
  "test/slow/browser-postgres.test.ts",
  "test/slow/browser-pglite.test.ts",
  "test/slow/slack-socket-mode.test.ts",
  "test/slow/phone-review.test.ts", // 25-40 s run alone at load 10-13 (Chromium, the server, an executor, eight pages at two sizes)
];
