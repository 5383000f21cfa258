import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";

/**
 * Each command imports only what it uses, so `--help`, `keys generate`, `policy check`
 * and `mcp` (started once per agent session) do not load Bolt, the database layer or the server.
 * The built CLI runs with a hook that records every module it resolves; `agents list`, which does
 * need the database, is the control that shows the record sees the database layer.
 */
const RECORDER = fileURLToPath(new URL("../support/import-recorder.mjs", import.meta.url));
/** Text only the database layer's and Slack's code contains. */
const HEAVY = ["drizzle", "SocketModeReceiver"];
/** The packages of the database layer, Slack and the server, installed beside dist/. */
const HEAVY_PACKAGES = ["drizzle-orm", "@electric-sql/pglite", "@slack/bolt", "@slack/web-api", "hono", "@hono/node-server"];

describe("commands load lazily", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-lazy-commands-"));
    writeFileSync(
      path.join(dir, "countersign.yml"),
      "defaults: { approvers: [U0ALICE] }\ntargets:\n  crm:\n    adapter: http.json\n    baseUrl: http://127.0.0.1:9\n",
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs a command under the recorder; returns the package files it loaded and their code. */
  async function loaded(name: string, args: string[]): Promise<{ files: string[]; bytes: number; heavy: string[] }> {
    const log = path.join(dir, `${name}.imports`);
    const result = await runCli(args, { cwd: dir, env: { NODE_OPTIONS: `--import ${RECORDER}`, COUNTERSIGN_IMPORT_LOG: log } });
    expect(result.stderr, `${args.join(" ")}: ${result.stderr}`).not.toMatch(/^\s+at /m);
    const urls = existsSync(log)
      ? [
          ...new Set(
            readFileSync(log, "utf8")
              .split("\n")
              .filter((u) => u.startsWith("file:")),
          ),
        ]
      : [];
    const files = urls.map((u) => fileURLToPath(u));
    const code = files.map((f) => readFileSync(f, "utf8"));
    return { files, bytes: code.reduce((n, c) => n + c.length, 0), heavy: HEAVY.filter((marker) => code.some((c) => c.includes(marker))) };
  }

  it("the control: a database command loads the database layer, and the record names the built CLI", async () => {
    const control = await loaded("agents", ["agents", "list"]);
    expect(control.files.some((f) => f.endsWith(`${path.sep}dist${path.sep}cli.js`))).toBe(true);
    expect(control.heavy).toContain("drizzle");
  }, 120_000);

  it("--help loads the entry point alone", async () => {
    const help = await loaded("help", ["--help"]);
    expect(help.files.map((f) => path.basename(f))).toContain("cli.js");
    // The command table is a module of its own, so esbuild moves its helpers (__export …) to a
    // chunk the entry imports; that chunk holds no module, of ours (// src/…) or a package's.
    const others = help.files.filter((f) => path.basename(f) !== "cli.js");
    expect(others.filter((f) => !f.includes(`${path.sep}dist${path.sep}`) || /^\/\/ (src|node_modules)\//m.test(readFileSync(f, "utf8")))).toEqual([]);
  }, 60_000);

  it.each([
    ["keys generate", ["keys", "generate"]],
    ["policy check", ["policy", "check", "countersign.yml"]],
    ["mcp", ["mcp"]],
  ])(
    "%s loads neither the database layer nor Slack nor the server, from dist/ or node_modules",
    async (name, args) => {
      const run = await loaded(name.replace(" ", "-"), args);
      expect(run.files.length).toBeGreaterThan(1);
      expect(run.heavy).toEqual([]);
      const heavyPackages = HEAVY_PACKAGES.map((name) => `${path.sep}node_modules${path.sep}${name.replace("/", path.sep)}${path.sep}`);
      expect(run.files.filter((f) => heavyPackages.some((p) => f.includes(p)))).toEqual([]);
    },
    60_000,
  );
});
