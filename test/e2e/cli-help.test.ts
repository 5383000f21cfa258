import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";

/**
 * The help text says what `start` runs: both demo targets (http.json, and postgres.row with
 * DATABASE_URL). `<command> --help` prints that help and runs nothing: `start --help` used to
 * start the server, the demo target and an executor.
 */
describe("countersign --help", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-cli-help-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("names both demo targets start runs on, and when the postgres.row one is added", async () => {
    const help = await runCli(["--help"], { cwd: dir });
    expect(help.code, help.stderr).toBe(0);
    const start = help.stdout.slice(help.stdout.indexOf("countersign start"), help.stdout.indexOf("countersign serve"));
    expect(start).toContain("an http.json API");
    expect(start).toContain("with DATABASE_URL, a postgres.row");
    expect(start).toContain("CREATEDB and CREATEROLE");
    expect(help.stdout).toContain("Only start runs without one (on its demo targets).");
    expect(help.stdout).not.toMatch(/\ba demo target\b/);
  }, 60_000);

  it.each([["start"], ["serve"], ["executor"], ["mcp"]])(
    "%s --help prints the help and starts nothing",
    async (command) => {
      const dataDir = path.join(dir, `${command}-data`);
      const [general, specific] = await Promise.all([
        runCli(["--help"], { cwd: dir }),
        runCli([command, "--help"], { cwd: dir, env: { COUNTERSIGN_DATA_DIR: dataDir, PORT: "9" } }),
      ]);
      expect(specific.code, specific.stderr).toBe(0);
      expect(specific.stderr).toBe("");
      expect(specific.stdout).toBe(general.stdout);
      // Nothing was opened: no data dir (it would be inside the working directory), nothing else written there.
      expect(readdirSync(dir)).toEqual([]);
    },
    60_000,
  );
});
