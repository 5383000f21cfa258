import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvConfig } from "../../src/config/schema.ts";
import { runCli } from "../support/cli.ts";

/**
 * The help text says what `start` runs: both demo targets (http.json, and postgres.row with
 * DATABASE_URL). `<command> --help` prints that command's usage and runs nothing (every command,
 * against a live server: cli-help-safe.test.ts).
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
    // Summaries are wrapped to the terminal's width; the phrases are looked for across line breaks.
    const start = help.stdout.slice(help.stdout.indexOf("countersign start"), help.stdout.indexOf("countersign serve")).replace(/\s+/g, " ");
    expect(start).toContain("an http.json API");
    expect(start).toContain("with DATABASE_URL, a postgres.row");
    expect(start).toContain("CREATEDB and CREATEROLE");
    expect(help.stdout).toContain("Only start runs without one (on its demo targets).");
    expect(help.stdout).not.toMatch(/\ba demo target\b/);
  }, 60_000);

  it.each([["start"], ["serve"], ["executor"], ["mcp"]])(
    "%s --help prints its usage and starts nothing",
    async (command) => {
      const dataDir = path.join(dir, `${command}-data`);
      const specific = await runCli([command, "--help"], { cwd: dir, env: { COUNTERSIGN_DATA_DIR: dataDir, PORT: "9" } });
      expect(specific.code, specific.stderr).toBe(0);
      expect(specific.stderr).toBe("");
      expect(specific.stdout).toMatch(new RegExp(`^countersign ${command} — `));
      expect(specific.stdout).toContain(`Usage:\n  countersign ${command}`);
      // Nothing was opened: no data dir (it would be inside the working directory), nothing else written there.
      expect(readdirSync(dir)).toEqual([]);
    },
    60_000,
  );

  it("the roles' usage lists every variable the env schema reads, with its default", async () => {
    const help = (command: string) => runCli([command, "--help"], { cwd: dir });
    const [serve, executor, start] = [await help("serve"), await help("executor"), await help("start")];
    const listed = (text: string) => new Set([...text.slice(text.indexOf("Environment")).matchAll(/^ {2}([A-Z][A-Z0-9_]+)/gm)].map((m) => m[1]));
    const variables = Object.keys(EnvConfig.shape);
    expect(new Set([...listed(serve.stdout), ...listed(executor.stdout), ...listed(start.stdout)])).toEqual(new Set(variables));
    for (const name of ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL", "COUNTERSIGN_METRICS_TOKEN", "DATABASE_URL"])
      expect(listed(serve.stdout), name).toContain(name);
    expect([...listed(executor.stdout)].sort()).toEqual([
      "COUNTERSIGN_CONFIG",
      "COUNTERSIGN_EXECUTOR_TOKEN",
      "COUNTERSIGN_GRANT_PUBLIC_KEY",
      "COUNTERSIGN_URL",
      "LOG_LEVEL",
    ]);
    expect(serve.stdout).toContain("PORT (default 3000)");
    expect(serve.stdout).toContain("COUNTERSIGN_DATA_DIR (default ./.countersign)");
  }, 60_000);
});
