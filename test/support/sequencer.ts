import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { LONGEST_FIRST } from "./suites.ts";

/**
 * Starts the longest test files first (LONGEST_FIRST in suites.ts, in that order), then the rest
 * in vitest's own order. Vitest orders by the durations it cached from earlier runs, and without
 * them (a fresh clone, CI) by file size, largest first: test/e2e/slack.test.ts, the longest file
 * but 9 lines long, then starts last and one worker runs it alone for a minute at the end.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = LONGEST_FIRST.indexOf(path.relative(this.ctx.config.root, spec.moduleId).split(path.sep).join("/"));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    // Array.prototype.sort is stable: files off the list keep vitest's order after the listed ones.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
