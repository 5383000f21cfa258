import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { environmentVariables } from "../../../src/cli/env-help.ts";

/** The "What each needs" table of docs/deploy.md: each row's variables and whether serve and the executor read them. */
function deployTable(): { names: string[]; serve: boolean; executor: boolean; line: string }[] {
  const page = readFileSync(new URL("../../../docs/deploy.md", import.meta.url), "utf8");
  const start = page.indexOf("## What each needs");
  expect(start, 'docs/deploy.md has a "## What each needs" section').toBeGreaterThanOrEqual(0);
  const section = page.slice(start, page.indexOf("\n## ", start + 1));
  return section
    .split("\n")
    .filter((line) => /^\|\s*`[A-Z]/.test(line))
    .map((line) => {
      const [variables = "", serve = "", executor = ""] = line
        .split("|")
        .slice(1)
        .map((cell) => cell.trim());
      return { names: [...variables.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!), serve: serve !== "—", executor: executor !== "—", line };
    });
}

describe("docs/deploy.md's variables table", () => {
  const rows = deployTable();
  const variables = environmentVariables();

  it("names every variable serve or the executor reads, and only those", () => {
    const documented = rows.flatMap((row) => row.names);
    const read = variables.filter((v) => v.readers.includes("server") || v.readers.includes("executor")).map((v) => v.name);
    expect([...new Set(documented)].sort()).toEqual([...read].sort());
  });

  it("says which process reads each, as the config schema's readers do", () => {
    for (const row of rows) {
      for (const name of row.names) {
        const readers = variables.find((v) => v.name === name)!.readers;
        expect({ name, serve: row.serve, executor: row.executor }, row.line).toEqual({
          name,
          serve: readers.includes("server"),
          executor: readers.includes("executor"),
        });
      }
    }
  });
});
