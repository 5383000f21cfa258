import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { interpolate } from "../../../src/config/interpolate.ts";
import { ConfigError, loadConfig, type Config, type ExecutorConfig, type Role } from "../../../src/config/load.ts";

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory, optionally with a `countersign.yml` (or another file name) in it. */
function dirWith(yaml: string | null, fileName = "countersign.yml"): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-config-test-"));
  tempDirs.push(dir);
  if (yaml !== null) {
    mkdirSync(path.dirname(path.join(dir, fileName)), { recursive: true });
    writeFileSync(path.join(dir, fileName), yaml);
  }
  return dir;
}

interface LoadArgs {
  env?: Record<string, string | undefined>;
  role?: Role;
  fallback?: unknown;
}

/** What an executor needs besides the file; the tests of its targets take it as given. */
const EXECUTOR_ENV = {
  COUNTERSIGN_URL: "http://127.0.0.1:3000",
  COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length",
  COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n",
};

/** The server's view (the role most code sees), or the CLI's, which has the same keys bar the secrets. */
function load(yaml: string | null, { env = {}, role = "server", fallback }: LoadArgs = {}): Config {
  return loadConfig({ env, role, cwd: dirWith(yaml), fallback }) as Config;
}

function loadExecutor(yaml: string | null, env: Record<string, string | undefined> = {}): ExecutorConfig {
  return loadConfig({ env: { ...EXECUTOR_ENV, ...env }, role: "executor", cwd: dirWith(yaml) });
}

/** The ConfigError that `run` throws (the test fails when it throws nothing, or something else). */
function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

/** Asserts the error names `key` in `problems` (and in its message) and returns that problem's message. */
function problemAt(err: ConfigError, key: string): string {
  const problem = err.problems.find((p) => p.key === key);
  expect(problem, `problems: ${JSON.stringify(err.problems)}`).toBeDefined();
  expect(err.message).toContain(key === "" ? "(top level)" : key);
  return problem!.message;
}

/** The one problem naming every unset variable (its key), and the keys that use each; returns its message. */
function unsetAt(err: ConfigError, variables: string, ...keys: string[]): string {
  const message = problemAt(err, variables);
  for (const key of keys) expect(message).toContain(key);
  return message;
}

const CRM_BASE = `
defaults:
  approvers: [U0ALICE, U0BOB]
targets:
  crm:
    adapter: http.json
    baseUrl: http://127.0.0.1:4010/api/
`;

const CRM_WITH_CREDENTIALS = `
defaults:
  approvers: [U0ALICE, U0BOB]
targets:
  crm:
    adapter: http.json
    baseUrl: http://127.0.0.1:4010
    read:
      headers:
        Authorization: Bearer \${CRM_READ}
    write:
      headers:
        Authorization: Bearer \${CRM_WRITE}
`;

/** A server on PostgreSQL must be given its grant key (the value is not parsed here). */
const GRANT_KEY = { COUNTERSIGN_GRANT_PRIVATE_KEY: "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----" };

describe("loadConfig: environment", () => {
  it("the server on PostgreSQL needs COUNTERSIGN_GRANT_PRIVATE_KEY; the one-shot commands do not", () => {
    const err = configError(() => load(null, { env: { DATABASE_URL: "postgres://db/cs" } }));
    expect(problemAt(err, "COUNTERSIGN_GRANT_PRIVATE_KEY")).toContain("countersign keys generate");
    expect(load(null, { env: { DATABASE_URL: "postgres://db/cs" }, role: "cli" }).database.kind).toBe("postgres");
  });

  it("no file and no environment → built-in defaults", () => {
    const cwd = dirWith(null);
    const config = loadConfig({ env: {}, role: "server", cwd });
    expect(config.port).toBe(3000);
    expect(config.publicUrl).toBe("http://localhost:3000");
    expect(config.database).toStrictEqual({ kind: "pglite", dataDir: path.join(cwd, ".countersign") });
    expect(config.dataDir).toBe(path.join(cwd, ".countersign"));
    expect(path.isAbsolute(config.dataDir)).toBe(true);
    expect(config.environment).toBe("default");
    expect(config.logLevel).toBe("info");
    expect(config.configPath).toBeNull();
    expect(config.targets).toStrictEqual({});
    expect(config.slack).toStrictEqual({ enabled: false });
    expect(config.defaults).toStrictEqual({
      approvers: [],
      requiredApprovals: 1,
      ttl: { default: 900, max: 86_400 },
      grantTtl: 600,
      reminders: [],
      risk: "low",
      batch: true,
      edits: true,
      delegation: true,
    });
  });

  it("ignores process.env: only the env it is given counts", () => {
    const saved = { PORT: process.env.PORT, DATABASE_URL: process.env.DATABASE_URL };
    process.env.PORT = "4321";
    process.env.DATABASE_URL = "postgres://should-not-be-read/db";
    try {
      const config = loadConfig({ env: {}, role: "server", cwd: dirWith(null) });
      expect(config.port).toBe(3000);
      expect(config.database.kind).toBe("pglite");
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it.each<[name: string, env: Record<string, string>, expected: Partial<Config>]>([
    ["PORT=8080: the default publicUrl follows the port", { PORT: "8080" }, { port: 8080, publicUrl: "http://localhost:8080" }],
    ["PORT=0 (any free port) is allowed", { PORT: "0" }, { port: 0 }],
    ["PUBLIC_URL wins over PORT", { PORT: "8080", PUBLIC_URL: "https://cs.example.com" }, { port: 8080, publicUrl: "https://cs.example.com" }],
    ["PUBLIC_URL loses its trailing slashes", { PUBLIC_URL: "https://cs.example.com/base//" }, { publicUrl: "https://cs.example.com/base" }],
    [
      "DATABASE_URL selects PostgreSQL",
      { DATABASE_URL: "postgres://u:p@db:5432/cs", ...GRANT_KEY },
      { database: { kind: "postgres", url: "postgres://u:p@db:5432/cs" } },
    ],
    ["DATABASE_URL may say postgresql://", { DATABASE_URL: "postgresql://db/cs", ...GRANT_KEY }, { database: { kind: "postgres", url: "postgresql://db/cs" } }],
    ["LOG_LEVEL", { LOG_LEVEL: "debug" }, { logLevel: "debug" }],
    ["unrelated variables are ignored", { HOME: "/root", SOMETHING_ELSE: "x" }, { port: 3000 }],
    ["HOST defaults to every interface", {}, { host: "0.0.0.0" }],
    ["HOST names the interface serve listens on", { HOST: "127.0.0.1" }, { host: "127.0.0.1" }],
    ["HOST may be an IPv6 address", { HOST: "::" }, { host: "::" }],
  ])("%s", (_name, env, expected) => {
    expect(load(null, { env })).toMatchObject(expected);
  });

  it("COUNTERSIGN_DATA_DIR is resolved against cwd, absolute paths are kept", () => {
    const cwd = dirWith(null);
    const relative = loadConfig({ env: { COUNTERSIGN_DATA_DIR: "state/db" }, role: "server", cwd });
    expect(relative.dataDir).toBe(path.join(cwd, "state", "db"));
    expect(relative.database).toStrictEqual({ kind: "pglite", dataDir: path.join(cwd, "state", "db") });
    const absolute = loadConfig({ env: { COUNTERSIGN_DATA_DIR: "/var/lib/countersign" }, role: "server", cwd });
    expect(absolute.dataDir).toBe("/var/lib/countersign");
  });

  it.each<[name: string, env: Record<string, string>, key: string]>([
    ["PORT not a number", { PORT: "abc" }, "PORT"],
    ["PORT too large", { PORT: "70000" }, "PORT"],
    ["PORT negative", { PORT: "-1" }, "PORT"],
    ["PORT not an integer", { PORT: "80.5" }, "PORT"],
    ["HOST with a scheme", { HOST: "http://0.0.0.0" }, "HOST"],
    ["HOST with a port", { HOST: "localhost:3000x" }, "HOST"],
    ["PUBLIC_URL not a URL", { PUBLIC_URL: "not a url" }, "PUBLIC_URL"],
    ["PUBLIC_URL not http(s)", { PUBLIC_URL: "ftp://cs.example.com" }, "PUBLIC_URL"],
    ["DATABASE_URL not postgres", { DATABASE_URL: "mysql://db/cs" }, "DATABASE_URL"],
    ["LOG_LEVEL unknown", { LOG_LEVEL: "verbose" }, "LOG_LEVEL"],
  ])("refuses %s, naming the variable", (_name, env, key) => {
    const err = configError(() => load(null, { env }));
    expect(err.message).toMatch(/\(environment\)/);
    problemAt(err, key);
  });

  it("reports every bad variable at once", () => {
    const err = configError(() => load(null, { env: { PORT: "abc", LOG_LEVEL: "loud" } }));
    expect(err.problems.map((p) => p.key).sort()).toEqual(["LOG_LEVEL", "PORT"]);
  });

  // PORT="" (as `PORT= countersign serve` or an empty .env line gives) must not coerce to 0:
  // an empty variable means unset.
  it("an empty PORT is not silently read as port 0", () => {
    let config: Config;
    try {
      config = load(null, { env: { PORT: "" } });
    } catch (err) {
      problemAt(err as ConfigError, "PORT");
      return;
    }
    expect(config.port).not.toBe(0);
    expect(config.publicUrl).not.toBe("http://localhost:0");
  });
});

describe("loadConfig: the config file", () => {
  it("reads countersign.yml from cwd and records where it came from", () => {
    const cwd = dirWith(CRM_BASE);
    const config = loadConfig({ env: {}, role: "server", cwd });
    expect(config.configPath).toBe(path.join(cwd, "countersign.yml"));
    expect(config.targets.crm).toStrictEqual({
      adapter: "http.json",
      baseUrl: "http://127.0.0.1:4010/api/",
      read: { headers: {} },
      precondition: "etag",
      timeoutMs: 5_000,
      watch: { intervalSeconds: 30 },
    });
    expect(config.defaults.approvers).toEqual(["U0ALICE", "U0BOB"]);
  });

  it("COUNTERSIGN_CONFIG points to another file, relative to cwd", () => {
    const cwd = dirWith(CRM_BASE.replace("defaults:", "environment: prod-eu\ndefaults:"), "conf/cs.yml");
    const config = loadConfig({ env: { COUNTERSIGN_CONFIG: "conf/cs.yml" }, role: "server", cwd });
    expect(config.configPath).toBe(path.join(cwd, "conf", "cs.yml"));
    expect(config.environment).toBe("prod-eu");
  });

  it("COUNTERSIGN_CONFIG pointing to a missing file is an error naming COUNTERSIGN_CONFIG", () => {
    const cwd = dirWith(CRM_BASE); // countersign.yml exists, but the named file does not
    const err = configError(() => loadConfig({ env: { COUNTERSIGN_CONFIG: "missing.yml" }, role: "server", cwd }));
    expect(err.problems).toHaveLength(1);
    expect(problemAt(err, "COUNTERSIGN_CONFIG")).toContain(path.join(cwd, "missing.yml"));
  });

  it("an empty file is the defaults", () => {
    const config = load("");
    expect(config.configPath).not.toBeNull();
    expect(config.port).toBe(3000);
    expect(config.targets).toStrictEqual({});
  });

  it("the fallback is used only when there is no file", () => {
    const fallback = { environment: "demo", defaults: { approvers: ["U0DEMO"] } };
    const withoutFile = load(null, { fallback });
    expect(withoutFile.environment).toBe("demo");
    expect(withoutFile.configPath).toBeNull();
    const withFile = load("environment: from-file\n", { fallback });
    expect(withFile.environment).toBe("from-file");
    expect(withFile.defaults.approvers).toEqual([]);
  });

  it("executor: missingAfterSeconds is 60 and an executor is expected unless set; 50 is the least accepted", () => {
    expect(load("").executor).toStrictEqual({ leaseSeconds: 60, missingAfterSeconds: 60, expected: true });
    expect(load("executor: { missingAfterSeconds: 50, expected: false }\n").executor).toStrictEqual({
      leaseSeconds: 60,
      missingAfterSeconds: 50,
      expected: false,
    });
  });

  it("invalid YAML is an error at the top level with the line", () => {
    const err = configError(() => load("targets:\n  crm: [\n"));
    expect(problemAt(err, "")).toMatch(/is not valid YAML at line \d+/);
    expect(err.message).toContain("countersign.yml");
  });

  it("a YAML document that is not a mapping is refused at the top level", () => {
    const err = configError(() => load("- a\n- b\n"));
    problemAt(err, "");
  });

  it.each<[name: string, yaml: string, key: string, message?: RegExp]>([
    ["environment with upper case", "environment: Prod\n", "environment"],
    ["bad review channel", "slack:\n  reviewChannel: general\n", "slack.reviewChannel", /Slack channel id/],
    ["bad default approver id", "defaults:\n  approvers: [U0ALICE, alice]\n", "defaults.approvers.1", /Slack user id/],
    ["requiredApprovals zero", "defaults:\n  approvers: [U0ALICE]\n  requiredApprovals: 0\n", "defaults.requiredApprovals"],
    ["ttl default greater than max", "defaults:\n  ttl:\n    default: 100\n    max: 50\n", "defaults.ttl.default", /must not exceed ttl.max/],
    ["ttl default greater than the built-in max", "defaults:\n  ttl:\n    default: 90000\n", "defaults.ttl.default"],
    ["target ttl default greater than max", CRM_BASE + "    policy:\n      ttl:\n        default: 600\n        max: 60\n", "targets.crm.policy.ttl.default"],
    ["target adapter unknown", CRM_BASE.replace("http.json", "sql"), "targets.crm.adapter", /"sql" is not a kind of target.*'http.json' or 'postgres.row'/],
    ["target adapter missing", CRM_BASE.replace(/ +adapter:.*\n/, ""), "targets.crm.adapter", /is missing; name the kind of target/],
    ["target baseUrl not http(s)", CRM_BASE.replace("http://127.0.0.1:4010/api/", "file:///etc/passwd"), "targets.crm.baseUrl", /http\(s\) URL/],
    ["target baseUrl missing", CRM_BASE.replace(/ +baseUrl:.*\n/, ""), "targets.crm.baseUrl"],
    ["target timeoutMs above a minute", CRM_BASE + "    timeoutMs: 60001\n", "targets.crm.timeoutMs"],
    ["target name with upper case", CRM_BASE.replace("crm:", "CRM:"), "targets.CRM"],
    ["header value not a string", CRM_BASE + "    read:\n      headers:\n        X-Retry: [1]\n", "targets.crm.read.headers.X-Retry"],
    [
      "executor.missingAfterSeconds under twice the claim wait",
      "executor: { missingAfterSeconds: 49 }\n",
      "executor.missingAfterSeconds",
      /must be at least 50: twice the longest claim wait \(25 s\)/,
    ],
    ["executor.expected not a boolean", "executor: { expected: maybe }\n", "executor.expected"],
  ])("refuses %s, naming the key", (_name, yaml, key, message) => {
    const err = configError(() => load(yaml));
    const text = problemAt(err, key);
    if (message) expect(text).toMatch(message);
  });

  const UNKNOWN_KEYS: [name: string, yaml: string, parent: string, key: string][] = [
    ["unknown top-level key", "bogus: 1\n", "", "bogus"],
    ["unknown key in defaults", "defaults:\n  approver: [U0ALICE]\n", "defaults", "approver"],
    ["unknown key in a target", CRM_BASE + "    bogus: 1\n", "targets.crm", "bogus"],
    ["unknown key in a target's policy", CRM_BASE + "    policy:\n      quorum: 2\n", "targets.crm.policy", "quorum"],
  ];

  it.each(UNKNOWN_KEYS)("names an %s by its own path", (_name, yaml, parent, key) => {
    const err = configError(() => load(yaml));
    expect(problemAt(err, parent === "" ? key : `${parent}.${key}`)).toContain(`'${key}'`);
  });
});

describe("loadConfig: ${VAR} interpolation and roles", () => {
  it("resolves ${VAR} in read headers", () => {
    const config = load(CRM_WITH_CREDENTIALS, { env: { CRM_READ: "r-123" } });
    expect(config.targets.crm!.read).toStrictEqual({ headers: { Authorization: "Bearer r-123" } });
  });

  it("a missing ${VAR} names the key and the variable", () => {
    const err = configError(() => load(CRM_WITH_CREDENTIALS, { env: {} }));
    expect(err.problems).toHaveLength(1); // the server never looks at CRM_WRITE
    expect(unsetAt(err, "CRM_READ", "targets.crm.read.headers.Authorization")).toMatch(
      /not set; export it \(targets\.crm\.read\.headers\.Authorization uses \$\{CRM_READ\}\)/,
    );
  });

  it("a ${VAR} set to the empty string counts as missing", () => {
    const err = configError(() => load(CRM_WITH_CREDENTIALS, { env: { CRM_READ: "" } }));
    unsetAt(err, "CRM_READ", "targets.crm.read.headers.Authorization");
  });

  it.each<Role>(["server", "cli"])("role %s drops targets.*.write unread, even when its ${VAR} is unset", (role) => {
    const config = load(CRM_WITH_CREDENTIALS, { role, env: { CRM_READ: "r-123" } });
    expect(config.targets.crm).toBeDefined();
    expect(config.targets.crm).not.toHaveProperty("write");
    expect(Object.keys(config.targets.crm!)).not.toContain("write");
    expect(JSON.stringify(config)).not.toContain("CRM_WRITE");
  });

  it("role server drops write even when the write variable is set (it never holds a write credential)", () => {
    const config = load(CRM_WITH_CREDENTIALS, { role: "server", env: { CRM_READ: "r-123", CRM_WRITE: "w-456" } });
    expect(config.targets.crm).not.toHaveProperty("write");
    expect(JSON.stringify(config)).not.toContain("w-456");
  });

  it("role server drops a malformed write block without validating it", () => {
    const config = load(CRM_BASE + "    write: not-a-mapping\n", { role: "server" });
    expect(config.targets.crm).not.toHaveProperty("write");
  });

  it("role executor resolves write headers", () => {
    const config = loadExecutor(CRM_WITH_CREDENTIALS, { CRM_READ: "r-123", CRM_WRITE: "w-456" });
    expect(config.targets.crm!.write).toStrictEqual({ headers: { Authorization: "Bearer w-456" } });
    expect(config.targets.crm!.read).toStrictEqual({ headers: { Authorization: "Bearer r-123" } });
  });

  it("role executor errors when a write variable is missing, naming the write key", () => {
    const err = configError(() => loadExecutor(CRM_WITH_CREDENTIALS, { CRM_READ: "r-123" }));
    expect(err.problems).toHaveLength(1);
    unsetAt(err, "CRM_WRITE", "targets.crm.write.headers.Authorization");
  });

  it("role executor reports every missing variable, in one problem", () => {
    const err = configError(() => loadExecutor(CRM_WITH_CREDENTIALS));
    expect(err.problems).toHaveLength(1);
    unsetAt(err, "CRM_READ, CRM_WRITE", "targets.crm.read.headers.Authorization", "targets.crm.write.headers.Authorization");
  });

  it("role executor requires a write block for every target", () => {
    const err = configError(() => loadExecutor(CRM_BASE));
    expect(problemAt(err, "targets.crm.write")).toMatch(/is missing/);
  });

  it("$${ escapes a literal ${ and reads no variable", () => {
    const yaml = CRM_BASE + '    read:\n      headers:\n        X-Template: "a$${NOT_A_VAR}b"\n';
    const config = load(yaml, { env: {} });
    expect(config.targets.crm!.read).toStrictEqual({ headers: { "X-Template": "a${NOT_A_VAR}b" } });
  });

  it("interpolates anywhere in the file, not only headers", () => {
    const yaml = 'environment: ${ENV_NAME}\ndefaults:\n  approvers: ["${APPROVER}"]\n';
    const config = load(yaml, { env: { ENV_NAME: "staging", APPROVER: "U0ALICE" } });
    expect(config.environment).toBe("staging");
    expect(config.defaults.approvers).toEqual(["U0ALICE"]);
  });

  it("a missing variable inside a list names the list index", () => {
    const err = configError(() => load('defaults:\n  approvers: [U0ALICE, "${APPROVER}"]\n', { env: {} }));
    unsetAt(err, "APPROVER", "defaults.approvers.1");
  });
});

describe("loadConfig: policy checks", () => {
  it("requiredApprovals greater than the approvers is an error naming targets.<name>.policy.requiredApprovals", () => {
    const err = configError(() => load(CRM_BASE + "    policy:\n      requiredApprovals: 3\n"));
    expect(problemAt(err, "targets.crm.policy.requiredApprovals")).toMatch(/needs 3 approvals but only 2 approver/);
  });

  it("a default requiredApprovals greater than the default approvers is reported for each target using it", () => {
    const yaml =
      CRM_BASE.replace("approvers: [U0ALICE, U0BOB]", "approvers: [U0ALICE]\n  requiredApprovals: 2") +
      "  billing:\n    adapter: http.json\n    baseUrl: http://127.0.0.1:4011\n";
    const err = configError(() => load(yaml));
    expect(err.problems.map((p) => p.key).sort()).toEqual(["targets.billing.policy.requiredApprovals", "targets.crm.policy.requiredApprovals"]);
  });

  it("duplicate approvers count once against requiredApprovals", () => {
    const yaml = CRM_BASE.replace("approvers: [U0ALICE, U0BOB]", "approvers: [U0ALICE, U0ALICE]\n  requiredApprovals: 2");
    const err = configError(() => load(yaml));
    problemAt(err, "targets.crm.policy.requiredApprovals");
  });

  it("no approvers anywhere is an error naming targets.<name>.policy.approvers", () => {
    const yaml = CRM_BASE.replace("  approvers: [U0ALICE, U0BOB]\n", "  requiredApprovals: 1\n");
    const err = configError(() => load(yaml));
    expect(problemAt(err, "targets.crm.policy.approvers")).toMatch(/nobody may approve/);
  });

  it("an empty per-target approver list is an error even with default approvers", () => {
    const err = configError(() => load(CRM_BASE + "    policy:\n      approvers: []\n"));
    problemAt(err, "targets.crm.policy.approvers");
  });

  it("per-target approvers satisfy a target without default approvers", () => {
    const yaml =
      CRM_BASE.replace("  approvers: [U0ALICE, U0BOB]\n", "  requiredApprovals: 1\n") +
      "    policy:\n      approvers: [U0CAROL, U0DAVE]\n      requiredApprovals: 2\n";
    const config = load(yaml);
    expect(config.targets.crm!.policy).toStrictEqual({ approvers: ["U0CAROL", "U0DAVE"], requiredApprovals: 2 });
  });

  it("no targets and no approvers is fine (nothing to approve yet)", () => {
    expect(load("defaults:\n  requiredApprovals: 2\n").defaults.requiredApprovals).toBe(2);
  });
});

describe("interpolate", () => {
  it.each<[name: string, raw: unknown, env: Record<string, string>, expected: unknown]>([
    ["a plain string", "abc", {}, "abc"],
    ["one reference", "Bearer ${T}", { T: "x" }, "Bearer x"],
    ["two references in one string", "${A}:${B}", { A: "1", B: "2" }, "1:2"],
    ["the same reference twice", "${A}${A}", { A: "ab" }, "abab"],
    ["escape", "$${A}", {}, "${A}"],
    ["escape next to a reference", "$${A}=${A}", { A: "1" }, "${A}=1"],
    ["a lone $ and braces are literal", "$ {A} $A {A}", {}, "$ {A} $A {A}"],
    ["an invalid name is literal", "${1A} ${A-B}", {}, "${1A} ${A-B}"],
    ["a value containing ${ is not re-expanded", "${A}", { A: "${B}", B: "no" }, "${B}"],
    ["non-strings pass through", { n: 1, b: true, z: null }, {}, { n: 1, b: true, z: null }],
    ["arrays and nested objects", { a: ["${X}", { b: "${X}" }] }, { X: "v" }, { a: ["v", { b: "v" }] }],
  ])("%s", (_name, raw, env, expected) => {
    const { value, problems } = interpolate(raw, env);
    expect(problems).toStrictEqual([]);
    expect(value).toStrictEqual(expected);
  });

  it("reports each missing variable with the dotted key path", () => {
    const { problems } = interpolate({ a: { b: ["ok", "${MISSING} ${ALSO}"] }, c: "${MISSING}" }, {});
    expect(problems.map((p) => p.key)).toEqual(["a.b.1", "a.b.1", "c"]);
    expect(problems[0]!.message).toContain("${MISSING}");
    expect(problems[1]!.message).toContain("${ALSO}");
  });

  it("skipped subtrees are dropped, and their variables are never read", () => {
    const read: string[] = [];
    const env = new Proxy({} as Record<string, string | undefined>, {
      get: (_t, name) => {
        read.push(String(name));
        return undefined;
      },
    });
    const { value, problems } = interpolate({ keep: "x", secret: { h: "${SECRET}" } }, env, (p) => p[0] === "secret");
    expect(value).toStrictEqual({ keep: "x" });
    expect(problems).toStrictEqual([]);
    expect(read).not.toContain("SECRET");
  });

  it("does not mutate its input", () => {
    const raw = { a: "${A}", b: ["${A}"] };
    interpolate(raw, { A: "1" });
    expect(raw).toStrictEqual({ a: "${A}", b: ["${A}"] });
  });
});

describe("loadConfig: browser.oidc (Sign in with Slack)", () => {
  const SLACK_ENV = { SLACK_BOT_TOKEN: "xoxb-1", SLACK_SIGNING_SECRET: "signing-secret" };
  const withOidc = (oidc: string, slack = "slack:\n  reviewChannel: C0REVIEW\n") => `${slack}browser:\n  oidc:\n${oidc}`;

  it("reads clientId and a ${VAR} clientSecret, with Slack as the default issuer and the bot token's team as the default team", () => {
    const config = load(withOidc("    clientId: '1234.5678'\n    clientSecret: ${SLACK_CLIENT_SECRET}\n"), {
      env: { ...SLACK_ENV, SLACK_CLIENT_SECRET: "s3cret" },
    });
    expect(config.browser.oidc).toEqual({ clientId: "1234.5678", clientSecret: "s3cret", issuer: "https://slack.com" });
    expect(config.browser.loginLinks).toBe(true);
  });

  it("only the server reads it: the executor and policy check run without the client secret", () => {
    const yaml = withOidc("    clientId: '1234.5678'\n    clientSecret: ${SLACK_CLIENT_SECRET}\n    teamId: T0TEAM\n", "");
    for (const role of ["check", "cli"] as const) expect(load(yaml, { role }).browser.oidc, role).toBeUndefined();
    expect(JSON.stringify(loadExecutor(yaml))).not.toContain("clientSecret");
  });

  it("names the unset variable of a ${VAR} clientSecret", () => {
    const err = configError(() => load(withOidc("    clientId: '1234.5678'\n    clientSecret: ${SLACK_CLIENT_SECRET}\n"), { env: SLACK_ENV }));
    unsetAt(err, "SLACK_CLIENT_SECRET", "browser.oidc.clientSecret");
  });

  it("without Slack, teamId is required and its absence names browser.oidc.teamId", () => {
    const err = configError(() => load(withOidc("    clientId: '1234.5678'\n    clientSecret: s\n", "")));
    expect(problemAt(err, "browser.oidc.teamId")).toContain("SLACK_BOT_TOKEN");
    expect(load(withOidc("    clientId: '1234.5678'\n    clientSecret: s\n    teamId: T0TEAM\n", "")).browser.oidc?.teamId).toBe("T0TEAM");
  });

  it("loginLinks: false with OIDC is a valid sign-in setup", () => {
    const config = load("browser:\n  loginLinks: false\n  oidc:\n    clientId: a\n    clientSecret: b\n    teamId: T0TEAM\n");
    expect(config.browser.loginLinks).toBe(false);
    expect(config.browser.oidc?.clientId).toBe("a");
  });

  it.each([
    ["a missing clientId", "    clientSecret: s\n    teamId: T0TEAM\n", "browser.oidc.clientId"],
    ["an empty clientSecret", "    clientId: a\n    clientSecret: ''\n    teamId: T0TEAM\n", "browser.oidc.clientSecret"],
    ["a malformed teamId", "    clientId: a\n    clientSecret: s\n    teamId: acme\n", "browser.oidc.teamId"],
    [
      "a plain-http issuer that is not loopback",
      "    clientId: a\n    clientSecret: s\n    teamId: T0TEAM\n    issuer: http://slack.example\n",
      "browser.oidc.issuer",
    ],
    ["an unknown key", "    clientId: a\n    clientSecret: s\n    teamId: T0TEAM\n    scope: openid\n", "browser.oidc.scope"],
  ])("%s is an error naming the key", (_name, oidc, key) => {
    problemAt(
      configError(() => load(withOidc(oidc, ""))),
      key,
    );
  });

  it("a loopback issuer may be plain http (a local emulator)", () => {
    expect(load(withOidc("    clientId: a\n    clientSecret: s\n    teamId: T0TEAM\n    issuer: http://127.0.0.1:4999\n", "")).browser.oidc?.issuer).toBe(
      "http://127.0.0.1:4999",
    );
  });
});
