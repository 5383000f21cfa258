import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestSpecification, Vitest } from "vitest/node";
import { describe, expect, it } from "vitest";
import { LongestFirstSequencer } from "../../support/sequencer.ts";
import { LONGEST_FIRST } from "../../support/suites.ts";
import fastConfig from "../../../vitest.config.ts";
import slowConfig from "../../../vitest.slow.config.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** Never test sources: dependencies, build output, git's own files. */
const SKIP = new Set(["node_modules", "dist", ".git"]);

function testFiles(dir = ""): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return SKIP.has(entry.name) ? [] : testFiles(rel);
    return entry.name.endsWith(".test.ts") ? [rel] : [];
  });
}

/** Whether a vitest config's include/exclude globs select the file (paths relative to the root, as vitest matches them). */
function selects(config: { test?: { include?: string[]; exclude?: string[] } }, file: string): boolean {
  const { include = [], exclude = [] } = config.test ?? {};
  return include.some((glob) => path.matchesGlob(file, glob)) && !exclude.some((glob) => path.matchesGlob(file, glob));
}

describe("npm test and npm run test:slow", () => {
  const files = testFiles();

  it("together run every *.test.ts exactly once", () => {
    expect(files.length).toBeGreaterThan(50);
    const notRun = files.filter((f) => !selects(fastConfig, f) && !selects(slowConfig, f));
    const runTwice = files.filter((f) => selects(fastConfig, f) && selects(slowConfig, f));
    expect(notRun, "test files neither script runs").toEqual([]);
    expect(runTwice, "test files both scripts run").toEqual([]);
  });

  it("each runs some: the slow scenarios are in test/slow/, everything else in npm test", () => {
    const slow = files.filter((f) => selects(slowConfig, f));
    expect(slow.length).toBeGreaterThan(0);
    expect(slow.every((f) => f.startsWith("test/slow/"))).toBe(true);
    expect(files.filter((f) => selects(fastConfig, f)).length).toBe(files.length - slow.length);
  });
});

describe("the order files start in", () => {
  it("lists as longest only files that exist", () => {
    const files = new Set(testFiles());
    expect(
      LONGEST_FIRST.filter((f) => !files.has(f)),
      "LONGEST_FIRST entries that are no test file",
    ).toEqual([]);
    expect(new Set(LONGEST_FIRST).size).toBe(LONGEST_FIRST.length);
  });

  it("starts the listed files first, in their order, even where vitest would go by file size (a fresh clone)", async () => {
    const files = testFiles().filter((f) => selects(fastConfig, f));
    // What vitest knows on a fresh clone: no durations, only each file's size.
    const ctx = {
      config: { root: ROOT },
      cache: { getFileTestResults: () => undefined, getFileStats: (key: string) => ({ size: statSync(path.join(ROOT, key.slice(1))).size }) },
    } as unknown as Vitest;
    const project = { name: "", config: { isolate: false, sequence: { groupOrder: 0 } } };
    const specs = files.map((f) => ({ project, moduleId: path.join(ROOT, f) }) as unknown as TestSpecification);
    const order = (await new LongestFirstSequencer(ctx).sort(specs)).map((s) => path.relative(ROOT, s.moduleId));
    const listed = LONGEST_FIRST.filter((f) => files.includes(f));
    expect(order.slice(0, listed.length)).toEqual(listed);
    expect(order.slice(listed.length)).toEqual(
      files.filter((f) => !listed.includes(f)).sort((a, b) => statSync(path.join(ROOT, b)).size - statSync(path.join(ROOT, a)).size),
    );
  });
});
