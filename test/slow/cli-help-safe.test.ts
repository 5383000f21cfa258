import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS, isGroup, leafCommands } from "../../src/cli/commands.ts";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import type { Database } from "../../src/store/db.ts";
import { BIN, runCli, startCli } from "../support/cli.ts";
import { crmTargetYaml } from "../support/crm-target-yaml.ts";
import { postgresKind } from "../support/databases.ts";
import { mergeRequest, READ_TOKEN, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";

/**
 * `-h`/`--help` anywhere in a command's arguments prints its usage and does nothing else. Every
 * command and subcommand in the dispatcher's table runs with them, against a live `serve` and with
 * every variable it would need to do real work, so a command that ran instead would change the
 * database (the seeded agent `billing-bot` is the one the `agents` examples name) or leave a file.
 */
const TABLES = ["agents", "plans", "decisions", "audit_events", "pause", "login_links"];

describe.skipIf(!postgresKind)("--help runs nothing", () => {
  let dir: string;
  let cwd: string;
  let database: Database;
  let sql: postgres.Sql;
  let target: JsonResourceServer;
  let server: Awaited<ReturnType<typeof startCli>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-help-safe-"));
    cwd = mkdtempSync(path.join(dir, "cwd-"));
    database = await postgresKind!.open();
    const { url } = database as Database & { url: string }; // openThrowawayPostgres's
    sql = postgres(url, { onnotice: () => {}, max: 1 });
    target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1, email: "ana@old.example" } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
    await target.start();
    const config = path.join(dir, "countersign.yml");
    writeFileSync(
      config,
      ["defaults: { approvers: [U0ALICE] }", ...crmTargetYaml(target.url, { write: true, allowMerges: true }), "    watch: { intervalSeconds: 0 }"].join("\n"),
    );
    const keys = await testGrantKeys();
    env = {
      DATABASE_URL: url,
      COUNTERSIGN_CONFIG: config,
      COUNTERSIGN_GRANT_PRIVATE_KEY: keys.privatePem,
      COUNTERSIGN_GRANT_PUBLIC_KEY: keys.publicPem,
      COUNTERSIGN_EXECUTOR_TOKEN: "executor-token-0123456789",
      CRM_READ: READ_TOKEN,
      CRM_WRITE: WRITE_TOKEN,
      PORT: "0",
    };
    server = await startCli(["serve"], {
      cwd: dir,
      env: { ...env, LOG_LEVEL: "info" },
      ready: /"url":"(http:\/\/[^"]+)".*countersign serving/,
      timeoutMs: 90_000,
    });
    const serverUrl = /"url":"(http:\/\/[^"]+)"/.exec(server.output())![1]!;
    const added = await runCli(["agents", "add", "billing-bot"], { cwd: dir, env });
    expect(added.code, added.stderr).toBe(0);
    const key = added.stdout.trimEnd().split("\n").at(-1)!;
    const submitted = await fetch(`${serverUrl}/v1/plans`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(mergeRequest()),
    });
    expect(submitted.status, await submitted.clone().text()).toBe(201);
    // What a command would need to reach the server and the agent API, had it run.
    Object.assign(env, { COUNTERSIGN_URL: serverUrl, COUNTERSIGN_AGENT_KEY: key });
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    await target?.stop();
    await sql?.end({ timeout: 5 });
    await database?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every row of the tables a command could change, as text. */
  const snapshot = async () =>
    Object.fromEntries(
      await Promise.all(
        TABLES.map(async (table) => {
          const [row] = await sql.unsafe<[{ rows: string }]>(`SELECT coalesce(json_agg(t ORDER BY t::text), '[]')::text AS rows FROM ${table} t`);
          return [table, row.rows] as const;
        }),
      ),
    );

  /** Runs every case (a few at a time) and returns what each printed; a command that does not exit is killed and reported. */
  async function runAll(cases: string[][]): Promise<{ args: string[]; code: number | null; stdout: string; stderr: string }[]> {
    const results: { args: string[]; code: number | null; stdout: string; stderr: string }[] = [];
    const queue = [...cases];
    await Promise.all(
      [1, 2, 3, 4].map(async () => {
        for (let args = queue.shift(); args; args = queue.shift()) results.push({ args, ...(await runBounded(args, { cwd, env })) });
      }),
    );
    return results;
  }

  async function unchanged(run: () => Promise<void>): Promise<void> {
    const before = await snapshot();
    expect(JSON.parse(before.plans!)).toHaveLength(1);
    expect(before.agents).toContain("billing-bot");
    await run();
    expect(await snapshot()).toEqual(before);
    expect(readdirSync(cwd)).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(["countersign.yml", path.basename(cwd)].sort());
  }

  it("every command and subcommand, with --help or -h anywhere, prints its own usage and exits 0", async () => {
    const cases: { args: string[]; names: string }[] = [
      ...[["--help"], ["-h"], ["help"]].map((args) => ({ args, names: "countersign" })),
      ...COMMANDS.filter(isGroup).flatMap((g) =>
        [
          [g.name, "--help"],
          [g.name, "-h"],
        ].map((args) => ({ args, names: `countersign ${g.name}` })),
      ),
      ...leafCommands().flatMap((c) => {
        const words = c.name.split(" ");
        return [
          [...words, "--help"],
          [...words, "-h"],
          ["help", ...words],
          ...c.examples.map((e) => [...e, "--help"]),
          ...c.examples.map((e) => [...e, "-h"]),
        ].map((args) => ({ args, names: `countersign ${c.name}` }));
      }),
    ];
    await unchanged(async () => {
      const results = await runAll(cases.map((c) => c.args));
      const failures = results.flatMap(({ args, code, stdout, stderr }) => {
        const { names } = cases.find((c) => c.args === args)!;
        const wrong = [
          code !== 0 && `exit ${code}`,
          stderr !== "" && `stderr ${JSON.stringify(stderr.slice(0, 300))}`,
          !stdout.includes("Usage") && "no 'Usage'",
          !stdout.includes(names) && `no '${names}'`,
          /BEGIN|csk_|Revoked|Created|Paused|Resumed/.test(stdout) && "output of the command itself",
        ].filter(Boolean);
        return wrong.length > 0 ? [`countersign ${args.join(" ")}: ${wrong.join("; ")}`] : [];
      });
      expect(failures).toEqual([]);
    });
  }, 180_000);

  it("an unknown option is one line naming it and pointing to --help, exit 2, for every command", async () => {
    await unchanged(async () => {
      const results = await runAll(leafCommands().map((c) => [...c.name.split(" "), "--no-such-option"]));
      const failures = results.flatMap(({ args, code, stdout, stderr }) => {
        const name = args.slice(0, -1).join(" ");
        const wrong = [
          code !== 2 && `exit ${code}`,
          stdout !== "" && "wrote to stdout",
          stderr.trimEnd().includes("\n") && `more than one line: ${JSON.stringify(stderr.slice(0, 300))}`,
          !stderr.includes("'--no-such-option'") && "does not name the option",
          !stderr.includes(`countersign ${name} --help`) && "does not point to its --help",
        ].filter(Boolean);
        return wrong.length > 0 ? [`countersign ${args.join(" ")}: ${wrong.join("; ")}`] : [];
      });
      expect(failures).toEqual([]);
    });
  }, 180_000);
});

/** runCli with a bound: a command that runs instead of printing its help (a server, an executor) is killed. */
function runBounded(args: string[], options: { cwd: string; env: Record<string, string> }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const { PATH, HOME, TMPDIR } = process.env;
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: { PATH, HOME, TMPDIR, LOG_LEVEL: "warn", ...options.env } });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      stderr += "\n(killed: still running after 30 s)";
      child.kill("SIGKILL");
    }, 30_000);
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
