import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../src/demo/json-resource-server.ts";
import { generateGrantKeys } from "../../src/grant/keys.ts";
import type { Database } from "../../src/store/db.ts";
import { type CliResult, runCli, startCli } from "../support/cli.ts";
import { openThrowawayPostgres, postgresKind } from "../support/databases.ts";
import { freePort } from "../support/free-port.ts";
import { READ_TOKEN, testGrantKeys, WRITE_TOKEN } from "../support/harness.ts";
import { SlackEmulator } from "../support/slack-emulator.ts";

const adminUrl = process.env.TEST_DATABASE_URL;
const EXECUTOR_TOKEN = "executor-token-doctor-0123456789";
const REVIEW = "C0REVIEW";
const ESCALATION = "C0ESCALATE";

/** One file for both roles: every credential is a `${VAR}`, so each run changes only its environment. */
const CONFIG = [
  "environment: doctor",
  "defaults: { approvers: [U0ALICE] }",
  `slack: { reviewChannel: ${REVIEW}, escalationChannel: ${ESCALATION} }`,
  "targets:",
  "  crm:",
  "    adapter: http.json",
  '    baseUrl: "${CRM_URL}"',
  '    read: { headers: { Authorization: "Bearer ${CRM_READ}" } }',
  '    write: { headers: { Authorization: "Bearer ${CRM_WRITE}" } }',
  '    allow: { ops: [merge], paths: ["/contacts/*"] }',
  "  crmdb:",
  "    adapter: postgres.row",
  '    read: { url: "${CRMDB_READ_URL}" }',
  '    write: { url: "${CRMDB_WRITE_URL}" }',
  "    tables: { contacts: { key: [id], version: updated_at } }",
  "    allow: { ops: [update, insert], tables: [contacts] }",
].join("\n");

/**
 * `countersign doctor` against real parts: a PostgreSQL database with roles made for it, the
 * Slack emulator, the JSON target and, for the executor, a `serve` process. Each run breaks one
 * thing and finds exactly the line it breaks (and those that cannot be checked without it);
 * an unbroken run passes every check, and `policy check --role` prints the same lines.
 */
describe.skipIf(!postgresKind || !adminUrl)("countersign doctor", () => {
  const suffix = randomBytes(4).toString("hex");
  const rowsName = `doctor_${suffix}`;
  const role = (what: string) => `${rowsName}_${what}`;
  const ROLES = ["read", "read_rw", "write", "write_del"].map(role);
  let admin: postgres.Sql;
  let rows: postgres.Sql;
  let database: Database & { url: string };
  let unmigrated: Database & { url: string };
  let slack: SlackEmulator;
  let target: JsonResourceServer;
  let silent: { server: Server; sockets: Set<Socket>; url: string };
  let serve: Awaited<ReturnType<typeof startCli>>;
  let dir: string;
  let serverEnv: Record<string, string>;
  let executorEnv: Record<string, string>;

  const rowsUrl = (as: string) => {
    const u = new URL(adminUrl!);
    u.pathname = `/${rowsName}`;
    u.username = as;
    return u.toString();
  };

  beforeAll(async () => {
    admin = postgres(adminUrl!, { onnotice: () => {}, max: 1 });
    await admin.unsafe(`CREATE DATABASE ${rowsName}`);
    for (const name of ROLES) await admin.unsafe(`CREATE ROLE ${name} LOGIN`);
    const owner = new URL(adminUrl!);
    owner.pathname = `/${rowsName}`;
    rows = postgres(owner.toString(), { onnotice: () => {}, max: 1 });
    // Every row written is counted: a doctor that wrote would show here.
    await rows.unsafe(`
      CREATE TABLE write_log (n bigserial PRIMARY KEY, op text NOT NULL);
      CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO write_log (op) VALUES (TG_OP); RETURN NULL; END $$;
      CREATE TABLE contacts (id int4 PRIMARY KEY, name text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
      CREATE TRIGGER contacts_log AFTER INSERT OR UPDATE OR DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION log_write();
      INSERT INTO contacts (id, name) VALUES (1, 'Ana');
      TRUNCATE write_log;
      GRANT SELECT ON contacts TO ${role("read")};
      GRANT SELECT, UPDATE ON contacts TO ${role("read_rw")};
      GRANT SELECT, INSERT, UPDATE ON contacts TO ${role("write")};
      GRANT SELECT, INSERT, UPDATE, DELETE ON contacts TO ${role("write_del")};`);

    database = (await postgresKind!.open()) as Database & { url: string };
    unmigrated = await openThrowawayPostgres(adminUrl!, { prefix: "cs_doctor" });
    slack = new SlackEmulator();
    await slack.start();
    target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1 } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
    await target.start();
    silent = await silentServer();

    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-doctor-"));
    writeFileSync(path.join(dir, "countersign.yml"), CONFIG);
    const keys = await testGrantKeys();
    const port = await freePort();
    const shared = { COUNTERSIGN_EXECUTOR_TOKEN: EXECUTOR_TOKEN, CRM_URL: target.url, CRM_READ: READ_TOKEN, CRMDB_READ_URL: rowsUrl(role("read")) };
    serverEnv = {
      ...shared,
      DATABASE_URL: database.url,
      COUNTERSIGN_GRANT_PRIVATE_KEY: keys.privatePem,
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: "doctor-signing-secret",
      SLACK_API_URL: slack.url,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
    };
    // The server the executor's doctor asks: browser-only, so it needs no Slack of its own.
    const { SLACK_BOT_TOKEN: _bot, SLACK_SIGNING_SECRET: _secret, SLACK_API_URL: _api, ...serveEnv } = serverEnv;
    serve = await startCli(["serve"], {
      cwd: dir,
      env: { ...serveEnv, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info" },
      ready: /countersign serving/,
      timeoutMs: 120_000,
    });
    executorEnv = {
      ...shared,
      COUNTERSIGN_URL: `http://127.0.0.1:${port}`,
      COUNTERSIGN_GRANT_PUBLIC_KEY: keys.publicPem,
      CRM_WRITE: WRITE_TOKEN,
      CRMDB_WRITE_URL: rowsUrl(role("write")),
    };
  }, 180_000);

  afterAll(async () => {
    await serve?.stop();
    await target?.stop();
    await slack?.stop();
    await new Promise<void>((resolve) => {
      if (!silent) return resolve();
      for (const socket of silent.sockets) socket.destroy();
      silent.server.close(() => resolve());
    });
    await database?.close();
    await unmigrated?.close();
    await rows?.end({ timeout: 5 });
    if (admin) {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${rowsName} WITH (FORCE)`);
      for (const name of ROLES) await admin.unsafe(`DROP ROLE IF EXISTS ${name}`);
      await admin.end({ timeout: 5 });
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const doctor = (as: "server" | "executor", env: Record<string, string | undefined>, command = ["doctor", "--role", as]) =>
    runCli([...command, "countersign.yml"], { cwd: dir, env: { ...(as === "server" ? serverEnv : executorEnv), ...env } });
  const lines = (result: CliResult) => result.stdout.trimEnd().split("\n");
  const failed = (result: CliResult) => lines(result).filter((line) => line.startsWith("✗"));

  it("with nothing broken every line is ✓ and it exits 0, as the server and as the executor; policy check --role prints the same", async () => {
    const [server, executor, alias] = await Promise.all([
      doctor("server", {}),
      doctor("executor", {}),
      doctor("server", {}, ["policy", "check", "--role", "server"]),
    ]);
    for (const result of [server, executor]) {
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stderr).toBe("");
      const checks = lines(result).slice(0, -1);
      expect(
        checks.every((line) => line.startsWith("✓ ")),
        result.stdout,
      ).toBe(true);
      expect(lines(result).at(-1)).toBe(`All ${checks.length} checks pass.`);
    }
    expect(lines(server).map((line) => line.replace(/:.*/, ""))).toEqual([
      `✓ config ${path.join(dir, "countersign.yml")}`,
      "✓ variables",
      expect.stringMatching(/^✓ database "cs_test_\w+" on /),
      "✓ Slack",
      `✓ Slack`,
      "✓ Slack",
      "✓ Slack",
      "✓ target crm",
      "✓ target crmdb",
      "✓ target crmdb",
      expect.stringMatching(/^All \d+ checks pass\.$/),
    ]);
    expect(server.stdout).toContain(`✓ Slack: channel ${REVIEW} (slack.reviewChannel): the bot is a member`);
    expect(server.stdout).toContain(`✓ Slack: channel ${ESCALATION} (slack.escalationChannel): the bot is a member`);
    expect(server.stdout).toContain(`✓ target crmdb: the read role's rights: "${role("read")}" can write nothing on public.contacts`);
    expect(executor.stdout).toContain(`✓ target crmdb: the write role's rights: "${role("write")}" holds exactly what targets.crmdb.allow names`);
    expect(executor.stdout).toContain("✓ grant key: the server signs with");
    expect(alias.code).toBe(0);
    expect(alias.stdout).toBe(server.stdout);
  });

  it("each broken part is the ✗ line that names it, with its fix, and exit 1; the other checks still pass", async () => {
    const wrongKeys = await generateGrantKeys();
    const closedPort = await freePort();
    const cases: { broken: string; as: "server" | "executor"; env?: Record<string, string | undefined>; setup?: () => () => void; fails: RegExp[] }[] = [
      {
        broken: "a bot token Slack refuses",
        as: "server",
        env: { SLACK_BOT_TOKEN: "xoxb-not-the-bot-token" },
        fails: [
          /^✗ Slack: auth\.test refuses SLACK_BOT_TOKEN \(invalid_auth\) — copy the Bot User OAuth Token/,
          /^✗ Slack: channel C0REVIEW .*'invalid_auth'/,
          /^✗ Slack: channel C0ESCALATE .*'invalid_auth'/,
        ],
      },
      {
        broken: "the bot not in the escalation channel",
        as: "server",
        setup: () => {
          slack.botOutside.add(ESCALATION);
          return () => slack.botOutside.delete(ESCALATION);
        },
        fails: [/^✗ Slack: channel C0ESCALATE \(slack\.escalationChannel\): the bot is not a member of #c0escalate — invite the bot/],
      },
      {
        broken: "a read role that can UPDATE",
        as: "server",
        env: { CRMDB_READ_URL: rowsUrl(role("read_rw")) },
        fails: [
          new RegExp(
            `^✗ target crmdb: the read role's rights: "${role("read_rw")}" may UPDATE public\\.contacts — REVOKE UPDATE ON public\\.contacts FROM ${role("read_rw")};`,
          ),
        ],
      },
      {
        broken: "a database not migrated",
        as: "server",
        env: { DATABASE_URL: unmigrated.url },
        fails: [/^✗ database "cs_doctor_\w+" on [^:]+:\d+: the database is not migrated .* — run 'countersign migrate'/],
      },
      {
        broken: "a target nobody listens at",
        as: "server",
        env: { CRM_URL: `http://127.0.0.1:${closedPort}` },
        fails: [/^✗ target crm: GET http:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED .* — start the target, or fix targets\.crm\.baseUrl/],
      },
      {
        broken: "a target that never answers",
        as: "server",
        env: { CRM_URL: silent.url },
        fails: [/^✗ target crm: GET http:\/\/127\.0\.0\.1:\d+: no answer within 5 s \(timed out\) — /],
      },
      {
        broken: "a read credential the target refuses",
        as: "server",
        env: { CRM_READ: "not-the-read-token" },
        fails: [/^✗ target crm: GET .* with the read credential: HTTP 401, refused — fix targets\.crm\.read\.headers/],
      },
      {
        broken: "a write credential in the server's environment",
        as: "server",
        env: { CRMDB_WRITE_URL: rowsUrl(role("write")) },
        fails: [/^✗ variables: the server holds CRMDB_WRITE_URL \(targets\.crmdb\.write\.url\): write credentials — unset CRMDB_WRITE_URL/],
      },
      {
        broken: "no executor token on the server",
        as: "server",
        env: { COUNTERSIGN_EXECUTOR_TOKEN: undefined },
        fails: [/^✗ variables: the server has no COUNTERSIGN_EXECUTOR_TOKEN, so serve refuses to start .* — set COUNTERSIGN_EXECUTOR_TOKEN/],
      },
      {
        broken: "a wrong executor token",
        as: "executor",
        env: { COUNTERSIGN_EXECUTOR_TOKEN: "not-the-executor-token-0123" },
        fails: [
          /^✗ server at .*: COUNTERSIGN_EXECUTOR_TOKEN refused \(wrong executor token \(COUNTERSIGN_EXECUTOR_TOKEN\)\) — set it to the server's/,
          /^✗ grant key: .* not compared, as the server refused the executor token/,
        ],
      },
      {
        broken: "a grant key the server does not sign with",
        as: "executor",
        env: { COUNTERSIGN_GRANT_PUBLIC_KEY: wrongKeys.publicPem },
        fails: [
          new RegExp(`^✗ grant key: COUNTERSIGN_GRANT_PUBLIC_KEY holds \`${wrongKeys.kid}\`, but the server signs with .* — set COUNTERSIGN_GRANT_PUBLIC_KEY`),
        ],
      },
      {
        broken: "a write role that may also DELETE",
        as: "executor",
        env: { CRMDB_WRITE_URL: rowsUrl(role("write_del")) },
        fails: [/^✗ target crmdb: the write role's rights: .* may also DELETE on public\.contacts, which targets\.crmdb\.allow does not name — REVOKE DELETE/],
      },
      {
        broken: "a write role that cannot write",
        as: "executor",
        env: { CRMDB_WRITE_URL: rowsUrl(role("read")) },
        fails: [
          /^✗ target crmdb: the write role's rights: .* lacks INSERT, UPDATE on public\.contacts, which targets\.crmdb\.allow needs — GRANT INSERT, UPDATE/,
        ],
      },
      {
        broken: "no server at COUNTERSIGN_URL",
        as: "executor",
        env: { COUNTERSIGN_URL: `http://127.0.0.1:${closedPort}` },
        fails: [
          /^✗ server at .*: .*ECONNREFUSED.* — start serve there, or fix COUNTERSIGN_URL$/,
          /^✗ server at .* \(executor token\): .*ECONNREFUSED/,
          /^✗ grant key: .*ECONNREFUSED/,
        ],
      },
      {
        broken: "a server secret in the executor's environment",
        as: "executor",
        env: { DATABASE_URL: database.url },
        fails: [/^✗ variables: the executor holds DATABASE_URL, which only the server uses — unset DATABASE_URL/],
      },
    ];
    const problems: string[] = [];
    const run = async (c: (typeof cases)[number]) => {
      const undo = c.setup?.();
      let result: CliResult;
      try {
        result = await doctor(c.as, c.env ?? {});
      } finally {
        undo?.();
      }
      const unexpected = failed(result).filter((line) => !c.fails.some((pattern) => pattern.test(line)));
      const missing = c.fails.filter((pattern) => !failed(result).some((line) => pattern.test(line)));
      if (result.code !== 1 || unexpected.length > 0 || missing.length > 0 || result.stderr !== "")
        problems.push(
          `${c.broken} (${c.as}): exit ${result.code}; unexpected ✗ ${JSON.stringify(unexpected)}; no ✗ for ${missing.join(", ")}\n${result.stdout}${result.stderr}`,
        );
    };
    // A case that changes a shared fake runs alone; the rest a few at a time, each a process of its own.
    for (const c of cases.filter((c) => c.setup)) await run(c);
    const queue = cases.filter((c) => !c.setup);
    await Promise.all(
      [1, 2, 3].map(async () => {
        for (let c = queue.shift(); c; c = queue.shift()) await run(c);
      }),
    );
    expect(problems).toEqual([]);
    // Every check only read.
    expect(target.writes()).toEqual([]);
    expect(await rows`SELECT count(*)::int AS n FROM write_log`).toEqual([{ n: 0 }]);
  });

  it("a config the process would refuse is the one ✗ line, naming every problem", async () => {
    const result = await doctor("executor", { COUNTERSIGN_URL: undefined, CRM_WRITE: undefined });
    expect(result.code).toBe(1);
    expect(lines(result)).toEqual([
      expect.stringMatching(/^✗ config .*countersign\.yml: the executor would refuse to start — CRM_WRITE: is not set; .*COUNTERSIGN_URL: is not set/),
    ]);
  });
});

/** A TCP server that accepts connections and never answers. */
function silentServer(): Promise<{ server: Server; sockets: Set<Socket>; url: string }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, sockets, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })),
  );
}
