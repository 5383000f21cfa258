import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import { ConfigError, loadConfig, type CliConfig, type ExecutorConfig, type ServerConfig } from "../../../src/config/load.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dirWith(yaml: string | null): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-roles-"));
  dirs.push(dir);
  if (yaml !== null) writeFileSync(path.join(dir, "countersign.yml"), yaml);
  return dir;
}

function thrown(run: () => unknown): ConfigError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

const TWO_TARGETS = `
defaults: { approvers: [U0ALICE] }
targets:
  crm:
    adapter: http.json
    baseUrl: http://127.0.0.1:4010
    read: { headers: { Authorization: "Bearer \${CRM_READ}" } }
    write: { headers: { Authorization: "Bearer \${CRM_WRITE}" } }
  billing:
    adapter: http.json
    baseUrl: http://127.0.0.1:4011
`;

const EXECUTOR_ENV = {
  COUNTERSIGN_URL: "http://127.0.0.1:3000",
  COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length",
  COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n",
};

describe("loadConfig: one typed view per role", () => {
  it("each role's type holds only what that process uses", () => {
    expectTypeOf<ServerConfig["targets"][string]>().not.toHaveProperty("write");
    expectTypeOf<ServerConfig>().not.toHaveProperty("grantPublicKeyPem");
    expectTypeOf<ExecutorConfig["targets"][string]["write"]>().toEqualTypeOf<{ headers: Record<string, string> } | { url: string }>();
    expectTypeOf<ExecutorConfig["serverUrl"]>().toEqualTypeOf<string>();
    expectTypeOf<ExecutorConfig>().not.toHaveProperty("grantPrivateKeyPem");
    expectTypeOf<CliConfig>().not.toHaveProperty("grantPrivateKeyPem");
    expectTypeOf<CliConfig>().not.toHaveProperty("executorToken");
  });

  it("the CLI's view carries no secret, not even a read credential, when every secret is set", () => {
    const env = {
      CRM_READ: "r-1",
      CRM_WRITE: "w-1",
      COUNTERSIGN_GRANT_PRIVATE_KEY: "-----BEGIN PRIVATE KEY-----\nsecret-key\n-----END PRIVATE KEY-----",
      COUNTERSIGN_EXECUTOR_TOKEN: "executor-token-secret-xyz",
      SLACK_BOT_TOKEN: "xoxb-bot-secret",
      SLACK_SIGNING_SECRET: "signing-secret",
    };
    const config = loadConfig({ env, role: "cli", cwd: dirWith(TWO_TARGETS) });
    const text = JSON.stringify(config);
    for (const secret of ["r-1", "w-1", "secret-key", "executor-token-secret-xyz", "xoxb-bot-secret", "signing-secret"]) expect(text).not.toContain(secret);
    expect(config.slack.enabled).toBe(false);
  });

  it("the executor's view requires its server, token and public key, naming each missing variable at once", () => {
    const err = thrown(() => loadConfig({ env: { CRM_READ: "r", CRM_WRITE: "w" }, role: "executor", cwd: dirWith(TWO_TARGETS) }));
    expect(err.problems.map((p) => p.key)).toEqual(["COUNTERSIGN_URL", "COUNTERSIGN_EXECUTOR_TOKEN", "COUNTERSIGN_GRANT_PUBLIC_KEY"]);
  });

  it("the executor's view names every target without a write block, and only those", () => {
    const err = thrown(() => loadConfig({ env: { ...EXECUTOR_ENV, CRM_READ: "r", CRM_WRITE: "w" }, role: "executor", cwd: dirWith(TWO_TARGETS) }));
    expect(err.problems.map((p) => p.key)).toEqual(["targets.billing.write"]);
    expect(err.message).toContain("write headers");
  });

  it("the executor's view has every write block resolved", () => {
    const yaml = TWO_TARGETS.replace("    baseUrl: http://127.0.0.1:4011", "    baseUrl: http://127.0.0.1:4011\n    write: { headers: { X-Key: k } }");
    const config = loadConfig({ env: { ...EXECUTOR_ENV, CRM_READ: "r", CRM_WRITE: "w" }, role: "executor", cwd: dirWith(yaml) });
    expect(config.targets.crm!.write).toStrictEqual({ headers: { Authorization: "Bearer w" } });
    expect(config.targets.billing!.write).toStrictEqual({ headers: { "X-Key": "k" } });
    expect(config.serverUrl).toBe("http://127.0.0.1:3000");
  });

  it("policy check's view resolves no credential and lists the targets an executor could not apply to", () => {
    const config = loadConfig({ env: { CRM_READ: "read-secret", CRM_WRITE: "write-secret" }, role: "check", cwd: dirWith(TWO_TARGETS) });
    expect(config.targetsWithoutWrite).toEqual(["billing"]);
    expect(config.targets.crm!.read).toStrictEqual({ headers: {} });
    expect(JSON.stringify(config)).not.toMatch(/read-secret|write-secret/);
  });
});

describe("loadConfig: requireFile", () => {
  it("without a file, a command that needs targets names COUNTERSIGN_CONFIG and ./countersign.yml", () => {
    for (const role of ["server", "executor"] as const) {
      const cwd = dirWith(null);
      const err = thrown(() => loadConfig({ env: EXECUTOR_ENV, role, cwd, requireFile: true }));
      expect(err.problems).toHaveLength(1);
      expect(err.problems[0]!.key).toBe("COUNTERSIGN_CONFIG");
      expect(err.problems[0]!.message).toContain(path.join(cwd, "countersign.yml"));
      expect(err.problems[0]!.message).toContain("./countersign.yml");
    }
  });

  it("is satisfied by ./countersign.yml, even an empty one", () => {
    const config = loadConfig({ env: {}, role: "server", cwd: dirWith(""), requireFile: true });
    expect(config.configPath).not.toBeNull();
  });

  it("a fallback (the demo's) stands in for the file", () => {
    const config = loadConfig({ env: {}, role: "server", cwd: dirWith(null), requireFile: true, fallback: { environment: "demo" } });
    expect(config.environment).toBe("demo");
  });

  it("without requireFile the built-in defaults still apply (start, one-shot commands)", () => {
    expect(loadConfig({ env: {}, role: "cli", cwd: dirWith(null) }).configPath).toBeNull();
  });
});
