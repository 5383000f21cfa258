import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli, type CliResult } from "../support/cli.ts";
import { waitFor } from "../support/wait-for.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL;
const EXAMPLE = fileURLToPath(new URL("../../countersign.example.yml", import.meta.url));

/**
 * Each misconfiguration a newcomer met ends the same way: exit 1, and one `countersign:` line
 * that names the variable or key and says how to fix it, without a stack trace.
 */
function expectNamedFailure(result: CliResult, key: string, fix: RegExp): void {
  const output = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
  expect(result.code, output).toBe(1);
  expect(result.stderr, output).not.toMatch(/^\s+at /m);
  const lines = result.stderr
    .trimEnd()
    .split("\n")
    .filter((line) => line.startsWith("countersign:"));
  expect(lines, output).toHaveLength(1);
  expect(result.stderr, output).toContain(key);
  expect(result.stderr, output).toMatch(fix);
}

/** A TCP port nobody listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function databaseUrl(change: (url: URL) => void): string {
  const url = new URL(testDatabaseUrl!);
  change(url);
  return url.toString();
}

describe("startup failures name the variable and the fix", () => {
  let dir: string;
  let grantKey: string;
  /** A directory with a valid countersign.yml needing no variable, so serve gets as far as the database. */
  let configured: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-startup-"));
    configured = mkdtempSync(path.join(dir, "configured-"));
    writeFileSync(path.join(configured, "countersign.yml"), "environment: startup-test\nexecutor: { expected: false }\n");
    const keys = await runCli(["keys", "generate"], { cwd: dir });
    expect(keys.code, keys.stderr).toBe(0);
    grantKey = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/.exec(keys.stdout)![0];
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("serve without a config file names COUNTERSIGN_CONFIG and ./countersign.yml", async () => {
    const cwd = mkdtempSync(path.join(dir, "serve-"));
    const result = await runCli(["serve"], { cwd });
    expectNamedFailure(result, "COUNTERSIGN_CONFIG", /\.\/countersign\.yml/);
    expect(result.stdout).toBe("");
  }, 60_000);

  it("executor without a config file names COUNTERSIGN_CONFIG and ./countersign.yml", async () => {
    const cwd = mkdtempSync(path.join(dir, "executor-"));
    const result = await runCli(["executor"], { cwd });
    expectNamedFailure(result, "COUNTERSIGN_CONFIG", /\.\/countersign\.yml/);
  }, 60_000);

  it("policy check with no file and no COUNTERSIGN_CONFIG says what to pass, not that COUNTERSIGN_CONFIG points nowhere", async () => {
    const cwd = mkdtempSync(path.join(dir, "check-"));
    const result = await runCli(["policy", "check"], { cwd });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("COUNTERSIGN_CONFIG: is not set");
    expect(result.stderr).toContain("countersign policy check FILE");
    expect(result.stderr).not.toContain("points to");
    expect(result.stderr).not.toMatch(/^\s+at /m);
  }, 60_000);

  it("policy check --role executor (the doctor) names the target that has no write block; without --role it warns and passes", async () => {
    const cwd = mkdtempSync(path.join(dir, "roles-"));
    writeFileSync(
      path.join(cwd, "cs.yml"),
      [
        "defaults: { approvers: [U0ALICE] }",
        "targets:",
        "  crm:",
        "    adapter: http.json",
        "    baseUrl: http://127.0.0.1:4010",
        '    write: { headers: { Authorization: "Bearer ${CRM_WRITE}" } }',
        "  billing:",
        "    adapter: http.json",
        "    baseUrl: http://127.0.0.1:4011",
      ].join("\n"),
    );
    const executorEnv = {
      COUNTERSIGN_URL: "http://127.0.0.1:3000",
      COUNTERSIGN_EXECUTOR_TOKEN: "a-long-enough-executor-token",
      COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----",
      CRM_WRITE: "w",
    };

    const asExecutor = await runCli(["policy", "check", "cs.yml", "--role", "executor"], { cwd, env: executorEnv });
    expect(asExecutor.code, asExecutor.stdout).toBe(1);
    expect(asExecutor.stdout).toMatch(/^✗ config .*cs\.yml: the executor would refuse to start — .*targets\.billing\.write: is missing/m);
    expect(asExecutor.stdout).not.toContain("targets.crm.write");
    expect(asExecutor.stderr).toBe("");

    const plain = await runCli(["policy", "check", "cs.yml"], { cwd });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(/target billing[\s\S]*executor: +CANNOT apply — no write block \(targets\.billing\.write\)/);
    expect(plain.stdout).toMatch(/target crm[\s\S]*executor: +write headers configured/);
    expect(plain.stdout).toContain("An executor would refuse to start: no write block for targets.billing.write");

    const asServer = await runCli(["policy", "check", "cs.yml", "--role", "server"], { cwd });
    expect(asServer.stdout).toMatch(/^✓ config .*cs\.yml: loads as the server loads it/m); // the server never reads a write block
    const serverOnPostgres = await runCli(["policy", "check", "cs.yml", "--role", "server"], { cwd, env: { DATABASE_URL: "postgres://db.example/cs" } });
    expect(serverOnPostgres.code, serverOnPostgres.stdout).toBe(1); // serve would refuse to start the same way
    expect(serverOnPostgres.stdout).toMatch(/^✗ config .* — COUNTERSIGN_GRANT_PRIVATE_KEY: is not set/m);
  }, 60_000);

  it("a misspelled top-level key is named first, and the server is never told to hold a write credential", async () => {
    const cwd = mkdtempSync(path.join(dir, "typo-"));
    writeFileSync(path.join(cwd, "countersign.yml"), readFileSync(EXAMPLE, "utf8").replace(/^targets:$/m, "targest:"));
    const result = await runCli(["serve"], { cwd });
    expectNamedFailure(result, "targest", /unknown key 'targest'; did you mean 'targets'\?/);
    expect(result.stderr).not.toMatch(/WRITE/);
  }, 60_000);

  it("policy check --role server (the doctor) on countersign.example.yml lists every variable to export on one line, and loads once they are set", async () => {
    const unset = await runCli(["policy", "check", "--role", "server", EXAMPLE], { cwd: dir });
    expect(unset.code).toBe(1);
    expect(unset.stdout.trimEnd().split("\n")).toEqual([
      expect.stringMatching(
        /^✗ config .*countersign\.example\.yml: the server would refuse to start — CRM_READ_TOKEN, CRMDB_READ_URL: are not set; export them/,
      ),
    ]);
    expect(unset.stdout).not.toMatch(/WRITE/);
    expect(unset.stderr).toBe("");

    const set = await runCli(["policy", "check", "--role", "server", EXAMPLE], {
      cwd: dir,
      env: { CRM_READ_TOKEN: "r", CRMDB_READ_URL: "postgres://crm_read@db.example/crm" },
    });
    expect(set.stdout).toMatch(/^✓ config .*countersign\.example\.yml: loads as the server loads it/m);
  }, 60_000);

  it("one-shot commands resolve no target credential: migrate and agents run on countersign.example.yml with no variable set", async () => {
    const cwd = mkdtempSync(path.join(dir, "one-shot-"));
    for (const args of [["migrate"], ["agents", "list"]]) {
      const result = await runCli(args, { cwd, env: { COUNTERSIGN_CONFIG: EXAMPLE } });
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
    }
  }, 120_000); // each boots the embedded database

  it("an unreachable COUNTERSIGN_URL is one line naming it, then quiet retries", async () => {
    const cwd = mkdtempSync(path.join(dir, "executor-unreachable-"));
    writeFileSync(path.join(cwd, "countersign.yml"), "environment: startup-test\n");
    const publicKey = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/.exec((await runCli(["keys", "generate"], { cwd })).stdout)![0];
    // A server that is not there: every connection is cut at once, and counted.
    let attempts = 0;
    const gone = net.createServer((socket) => {
      attempts++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => gone.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(gone.address() as net.AddressInfo).port}`;
    try {
      const executor = await startCli(["executor"], {
        cwd,
        env: { COUNTERSIGN_URL: url, COUNTERSIGN_EXECUTOR_TOKEN: "a-long-enough-executor-token", COUNTERSIGN_GRANT_PUBLIC_KEY: publicKey },
        ready: /COUNTERSIGN_URL/,
        timeoutMs: 60_000,
      });
      await waitFor("three retries after the first attempt", () => attempts >= 4);
      expect(await executor.stop()).toBe(0);
      const lines = executor.output().trimEnd().split("\n");
      expect(lines, executor.output()).toHaveLength(1);
      expect(lines[0]).toMatch(/COUNTERSIGN_URL: the server does not answer \(.*ECONNRESET\); start it or fix COUNTERSIGN_URL/);
    } finally {
      await new Promise<void>((resolve) => gone.close(() => resolve()));
    }
  }, 120_000);

  it("serve without COUNTERSIGN_EXECUTOR_TOKEN refuses in one line naming it, before anything starts; with executor.expected: false it starts", async () => {
    const expecting = mkdtempSync(path.join(dir, "no-token-"));
    writeFileSync(path.join(expecting, "countersign.yml"), "environment: startup-test\n");
    const data = path.join(expecting, "data");
    const refused = await runCli(["serve"], { cwd: expecting, env: { PORT: "0", COUNTERSIGN_DATA_DIR: data } });
    expectNamedFailure(refused, "COUNTERSIGN_EXECUTOR_TOKEN", /is not set, so no executor could claim an approved plan.*executor: \{ expected: false \}/);
    expect(refused.stdout).toBe("");
    expect(existsSync(data)).toBe(false); // no database was made

    const server = await startCli(["serve"], {
      cwd: configured,
      env: { PORT: "0", HOST: "127.0.0.1", COUNTERSIGN_DATA_DIR: path.join(dir, "not-expected-data"), LOG_LEVEL: "info" },
      ready: /countersign serving/,
      timeoutMs: 120_000,
    });
    expect(await server.stop()).toBe(0);
    expect(server.output()).not.toContain("COUNTERSIGN_EXECUTOR_TOKEN");
  }, 180_000);

  it("a port already in use names PORT", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as net.AddressInfo;
    try {
      const result = await runCli(["serve"], {
        cwd: configured,
        env: { PORT: String(port), HOST: "127.0.0.1", COUNTERSIGN_DATA_DIR: path.join(dir, "port-data") },
      });
      expectNamedFailure(result, "PORT", new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use.*set PORT to a free port`));
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  }, 120_000); // the embedded database opens before the server listens

  it("an unreachable DATABASE_URL (nothing listens on its port) names DATABASE_URL", async () => {
    const port = await closedPort();
    const result = await runCli(["serve"], {
      cwd: configured,
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/countersign`, COUNTERSIGN_GRANT_PRIVATE_KEY: grantKey, PORT: "0" },
    });
    expectNamedFailure(
      result,
      "DATABASE_URL",
      new RegExp(`cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}.*start PostgreSQL there, or fix the host and port`),
    );
  }, 60_000);

  it("migrate and agents name DATABASE_URL too", async () => {
    const port = await closedPort();
    const env = { DATABASE_URL: `postgres://postgres:s3cret-pw@127.0.0.1:${port}/countersign` };
    for (const args of [["migrate"], ["agents", "list"]]) {
      const result = await runCli(args, { cwd: dir, env });
      expectNamedFailure(result, "DATABASE_URL", /cannot reach PostgreSQL/);
      expect(result.stderr).not.toContain("s3cret-pw"); // the URL is named without its password
    }
  }, 60_000);

  it("start checks its executor's config first: a target without a write block stops it before anything runs", async () => {
    const cwd = mkdtempSync(path.join(dir, "start-nowrite-"));
    writeFileSync(
      path.join(cwd, "countersign.yml"),
      "defaults: { approvers: [U0ALICE] }\ntargets:\n  crm:\n    adapter: http.json\n    baseUrl: http://127.0.0.1:4010\n",
    );
    const result = await runCli(["start"], { cwd, env: { PORT: "0" } });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain("the executor that 'start' runs");
    expect(result.stderr).toContain("targets.crm.write: is missing");
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stdout).not.toContain("Countersign is running");
  }, 120_000);

  it("start stops, exit 1 naming why, when its executor dies; the demo target keeps its URL and data across the restart", async () => {
    const cwd = mkdtempSync(path.join(dir, "start-"));
    const first = await startCli(["start"], { cwd, env: { PORT: "0" }, ready: /Ctrl-C stops everything/, timeoutMs: 120_000 });
    const look = /^ {2}curl -s (http:\/\/127\.0\.0\.1:\d+)\/contacts\/1 -H 'Authorization: Bearer ([0-9a-f]+)'$/m;
    const [, targetUrl, readToken] = look.exec(first.output())!;
    expect(targetUrl, first.output()).toBeDefined();
    // A change lands on the target (here written directly with the demo's write token, as the executor would).
    const saved = JSON.parse(readFileSync(path.join(cwd, ".countersign", "demo-target.json"), "utf8")) as { writeToken: string };
    const written = await fetch(`${targetUrl}/contacts/1`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${saved.writeToken}`, "content-type": "application/json" },
      body: JSON.stringify({ email: "ana@landed.example" }),
    });
    expect(written.status).toBe(200);

    const pid = Number(/executor: pid (\d+)/.exec(first.output())![1]);
    process.kill(pid, "SIGKILL");
    const code = first.child.exitCode ?? (await new Promise<number | null>((resolve) => first.child.once("exit", (c) => resolve(c))));
    expect(code, first.output()).toBe(1);
    expect(first.output()).toContain(`the executor (pid ${pid}) was killed by SIGKILL; without it no approved plan is applied, so Countersign stops too`);

    const second = await startCli(["start"], { cwd, env: { PORT: "0" }, ready: /Ctrl-C stops everything/, timeoutMs: 120_000 });
    try {
      expect(second.output()).toContain(`curl -s ${targetUrl}/contacts/1 -H 'Authorization: Bearer ${readToken}'`);
      const read = await fetch(`${targetUrl}/contacts/1`, { headers: { authorization: `Bearer ${readToken}` } });
      expect(((await read.json()) as { email: string }).email).toBe("ana@landed.example");
      const refused = await fetch(`${targetUrl}/contacts/1`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${readToken}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(refused.status).toBe(403); // the printed token only reads
    } finally {
      expect(await second.stop()).toBe(0);
    }
  }, 300_000);

  describe.skipIf(!testDatabaseUrl)("on PostgreSQL", () => {
    let admin: postgres.Sql;
    const created: string[] = [];
    beforeAll(() => {
      admin = postgres(testDatabaseUrl!, { onnotice: () => {}, max: 1 });
    });
    afterAll(async () => {
      for (const name of created) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    });

    it("a database that does not exist names DATABASE_URL and says how to create it", async () => {
      const name = `cs_missing_${Date.now().toString(36)}`;
      const result = await runCli(["serve"], {
        cwd: configured,
        env: { DATABASE_URL: databaseUrl((u) => (u.pathname = `/${name}`)), COUNTERSIGN_GRANT_PRIVATE_KEY: grantKey, PORT: "0" },
      });
      expectNamedFailure(result, "DATABASE_URL", new RegExp(`database "${name}" does not exist.*createdb .*${name}`));
    }, 60_000);

    it("a role that does not exist names DATABASE_URL and the user", async () => {
      const result = await runCli(["serve"], {
        cwd: configured,
        env: { DATABASE_URL: databaseUrl((u) => (u.username = "no_such_role_cs")), COUNTERSIGN_GRANT_PRIVATE_KEY: grantKey, PORT: "0" },
      });
      expectNamedFailure(result, "DATABASE_URL", /refused user "no_such_role_cs" \(role "no_such_role_cs" does not exist\); create that role or fix the user/);
    }, 60_000);

    it("a missing grant key is reported before anything is migrated", async () => {
      const name = `cs_nokey_${Date.now().toString(36)}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      created.push(name);
      const url = databaseUrl((u) => (u.pathname = `/${name}`));
      const result = await runCli(["serve"], { cwd: configured, env: { DATABASE_URL: url, PORT: "0" } });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain("COUNTERSIGN_GRANT_PRIVATE_KEY: is not set");
      expect(result.stderr).toContain("countersign keys generate");
      expect(result.stderr).not.toMatch(/^\s+at /m);
      const db = postgres(url, { onnotice: () => {}, max: 1 });
      try {
        const schemas = await db`SELECT nspname FROM pg_namespace WHERE nspname = 'drizzle'`;
        const tables = await db`SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`;
        expect(schemas).toHaveLength(0);
        expect(tables).toHaveLength(0);
      } finally {
        await db.end();
      }
    }, 60_000);
  });
});
