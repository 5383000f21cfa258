import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
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
