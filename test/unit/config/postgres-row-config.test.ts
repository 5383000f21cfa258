import { describe, expect, it } from "vitest";
import { policyCheck } from "../../../src/cli/policy-check.ts";
import { ConfigError, loadConfig, type ExecutorConfig, type Role } from "../../../src/config/load.ts";
import { useConfigFiles } from "../../support/config-files.ts";

// Each file is one approver and the targets a test gives.
const { file } = useConfigFiles("countersign-postgres-row-config-", "defaults: { approvers: [U0ALICE] }\ntargets:\n");

const EXECUTOR_ENV = {
  COUNTERSIGN_URL: "http://127.0.0.1:3000",
  COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length",
  COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n",
};
const ENV = { CRMDB_READ_URL: "postgres://reader:r-secret@db/crm", CRMDB_WRITE_URL: "postgres://writer:w-secret@db/crm" };

function load(targets: string, role: Role = "server", env: Record<string, string> = ENV) {
  return loadConfig({ env: { ...(role === "executor" ? EXECUTOR_ENV : {}), ...env, COUNTERSIGN_CONFIG: file(targets) }, role });
}

function problems(run: () => unknown): { key: string; message: string }[] {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

const CRMDB = `  crmdb:
    adapter: postgres.row
    read: { url: "\${CRMDB_READ_URL}" }
    write: { url: "\${CRMDB_WRITE_URL}" }
    tables:
      contacts: { key: [id], version: updated_at }
      notes: { key: [id] }
    allow: { ops: [update, insert], tables: [contacts] }
    policy: { riskByOp: { insert: high } }
`;

describe("targets.<name> with adapter: postgres.row", () => {
  it("the server gets the read URL and its tables, never the write block; the executor gets both", () => {
    const server = load(CRMDB);
    expect(server.targets.crmdb).toMatchObject({
      adapter: "postgres.row",
      read: { url: ENV.CRMDB_READ_URL },
      tables: { contacts: { key: ["id"], version: "updated_at", versionSetBy: "countersign", schema: "public" } },
      watch: { intervalSeconds: 30 },
    });
    expect(server.targets.crmdb).not.toHaveProperty("write");
    expect(JSON.stringify(server)).not.toContain("w-secret");
    const executor = load(CRMDB, "executor") as ExecutorConfig;
    expect(executor.targets.crmdb!.write).toStrictEqual({ url: ENV.CRMDB_WRITE_URL });
  });

  it("sits beside http.json targets in one file", () => {
    const config = load(`${CRMDB}  crm: { adapter: http.json, baseUrl: "http://127.0.0.1:4010" }\n`);
    expect(Object.fromEntries(Object.entries(config.targets).map(([name, t]) => [name, t.adapter]))).toStrictEqual({ crmdb: "postgres.row", crm: "http.json" });
  });

  it.each<[what: string, targets: string, key: string, message: RegExp]>([
    [
      "a table allowed but not declared",
      CRMDB.replace("tables: [contacts]", "tables: [contacts, invoices]"),
      "targets.crmdb.allow.tables.1",
      /'invoices', which is not in tables/,
    ],
    ["an http.json op", CRMDB.replace("ops: [update, insert]", "ops: [merge]"), "targets.crmdb.allow.ops.0", /update|insert|delete/],
    ["an http.json op's risk", CRMDB.replace("insert: high", "merge: high"), "targets.crmdb.policy.riskByOp.merge", /unknown key 'merge'/],
    ["an http.json key", CRMDB + "    baseUrl: http://127.0.0.1:4010\n", "targets.crmdb.baseUrl", /unknown key 'baseUrl'/],
    ["a read URL that is not postgres://", CRMDB.replace('"${CRMDB_READ_URL}"', "http://db"), "targets.crmdb.read.url", /postgres:\/\/ URL/],
    [
      "a table name that is not a plain identifier",
      CRMDB.replace("notes: { key: [id] }", '"notes; drop table x": { key: [id] }'),
      "targets.crmdb.tables.notes; drop table x",
      /plain SQL identifier/,
    ],
    [
      "a key column that is not a plain identifier",
      CRMDB.replace("notes: { key: [id] }", 'notes: { key: ["id\\" or 1=1"] }'),
      "targets.crmdb.tables.notes.key.0",
      /plain SQL identifier/,
    ],
  ])("refuses %s, naming the key", (_what, targets, key, message) => {
    const found = problems(() => load(targets));
    const problem = found.find((p) => p.key === key);
    expect(problem, JSON.stringify(found)).toBeDefined();
    expect(problem!.message).toMatch(message);
  });

  it("refuses a URL whose query would set a session setting over the adapter's own, naming the target, the block and the parameter, never the password", () => {
    const found = problems(() =>
      load(CRMDB, "executor", {
        CRMDB_READ_URL: `${ENV.CRMDB_READ_URL}?sslmode=require&TimeZone=Europe%2FParis`,
        CRMDB_WRITE_URL: `${ENV.CRMDB_WRITE_URL}?statement_timeout=0&options=-c%20lock_timeout%3D0&prepare=false`,
      }),
    );
    expect(found.map((p) => p.key)).toStrictEqual(["targets.crmdb.read.url", "targets.crmdb.write.url", "targets.crmdb.write.url", "targets.crmdb.write.url"]);
    expect(found.map((p) => p.message.match(/^the URL's query sets "([^"]+)"/)?.[1])).toStrictEqual(["TimeZone", "statement_timeout", "options", "prepare"]);
    expect(found[1]!.message).toContain("which postgres.js would send as a session setting (or a pool option) over postgres.row's own");
    expect(JSON.stringify(found)).not.toMatch(/secret/);
    // How to reach the server (TLS, which host) may be said there; the server's view never reads the write URL.
    expect(
      load(CRMDB, "executor", {
        CRMDB_READ_URL: `${ENV.CRMDB_READ_URL}?sslmode=verify-full&sslrootcert=system&target_session_attrs=read-write&application_name=crm`,
        CRMDB_WRITE_URL: `${ENV.CRMDB_WRITE_URL}?sslmode=require`,
      }).targets.crmdb,
    ).toBeDefined();
    expect(load(CRMDB, "server", { ...ENV, CRMDB_WRITE_URL: `${ENV.CRMDB_WRITE_URL}?statement_timeout=0` }).targets.crmdb).toBeDefined();
  });

  it("the executor is told a postgres.row target without a write block needs a write connection", () => {
    const found = problems(() => load(CRMDB.replace(/ +write:.*\n/, ""), "executor"));
    expect(found).toStrictEqual([{ key: "targets.crmdb.write", message: expect.stringContaining("write connection") }]);
  });

  it("policy check resolves no URL, and lists the tables, what agents may propose and the versions", () => {
    const lines: string[] = [];
    policyCheck([file(CRMDB)], {}, (l) => lines.push(l));
    const text = lines.join("\n");
    expect(text).toContain("target crmdb (postgres.row PostgreSQL, 2 table(s))");
    expect(text).toContain(
      "table public.contacts: rows found by (id); version 'updated_at' (set by Countersign on every write) (targets.crmdb.tables.contacts)",
    );
    expect(text).toContain("table public.notes: rows found by (id); version xmin");
    expect(text).toContain("may propose: ops update, insert on tables contacts (targets.crmdb.allow)");
    expect(text).toMatch(/executor: +write connection configured/);
    expect(text).not.toMatch(/secret|unresolved/);
  });

  it("policy check still refuses a postgres.row target without a read block", () => {
    const found = problems(() => policyCheck([file(CRMDB.replace(/ +read:.*\n/, ""))], {}, () => undefined));
    expect(found.map((p) => p.key)).toContain("targets.crmdb.read");
  });
});
