import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, type Role } from "../../../src/config/load.ts";
import { nearMiss } from "../../../src/config/zod-problems.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const EXAMPLE = readFileSync(path.join(root, "countersign.example.yml"), "utf8");

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dirWith(yaml: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-shape-"));
  dirs.push(dir);
  writeFileSync(path.join(dir, "countersign.yml"), yaml);
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

const EXECUTOR_ENV = {
  COUNTERSIGN_URL: "http://127.0.0.1:3000",
  COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length",
  COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n",
};

const CRM = `
defaults: { approvers: [U0ALICE] }
targets:
  crm:
    adapter: http.json
    baseUrl: http://127.0.0.1:4010
    read: { headers: { Authorization: "Bearer \${CRM_READ_TOKEN}" } }
    write: { headers: { Authorization: "Bearer \${CRM_WRITE_TOKEN}" } }
`;

const READ_WITH = (inside: string) =>
  CRM.replace(
    '    read: { headers: { Authorization: "Bearer ${CRM_READ_TOKEN}" } }\n    write: { headers: { Authorization: "Bearer ${CRM_WRITE_TOKEN}" } }\n',
    `    read:\n${inside}`,
  );
const WRITE = '{ headers: { Authorization: "Bearer ${CRM_WRITE_TOKEN}" } }';

/** Configs a person gets wrong with a write credential in them, and the problem named first. */
const MISSHAPEN: [name: string, yaml: string, key: string, says: RegExp][] = [
  ["a misspelled top-level targets", CRM.replace("targets:", "targest:"), "targest", /unknown key 'targest'; did you mean 'targets'\?/],
  ["a misspelled write block", CRM.replace("    write:", "    wirte:"), "targets.crm.wirte", /did you mean 'write'\?/],
  ["a write block indented as a target", CRM.replace("    write:", "  write:"), "targets.write.adapter", /is missing; name the kind of target/],
  ["a write block at the top level", CRM.replace("    write:", "write:"), "write", /unknown key 'write'/],
  ["a write block inside read", READ_WITH(`      headers: { A: b }\n      write: ${WRITE}\n`), "targets.crm.read.write", /unknown key 'write'/],
  ["a write block inside the read headers", READ_WITH(`      headers:\n        write: ${WRITE}\n`), "targets.crm.read.headers.write", /expected string/],
];

describe("the shape is checked before any ${VAR} is resolved", () => {
  it.each(MISSHAPEN)("%s is named first, and the server is never told to export a write variable", (_name, yaml, key, says) => {
    // One-shot commands and policy check drop the read block unread, as the server drops write.
    const roles: Role[] = key.startsWith("targets.crm.read") ? ["server"] : ["server", "cli", "check"];
    for (const role of roles) {
      const err = thrown(() => loadConfig({ env: {}, role, cwd: dirWith(yaml) }));
      expect(err.problems[0], JSON.stringify(err.problems)).toMatchObject({ key, message: expect.stringMatching(says) });
      expect(err.message).not.toContain("CRM_WRITE_TOKEN");
    }
  });

  it("the variables of the rest of the file are listed after the typo, in one problem", () => {
    const err = thrown(() => loadConfig({ env: {}, role: "server", cwd: dirWith(CRM.replace("    write:", "    wirte:")) }));
    expect(err.problems.map((p) => p.key)).toEqual(["targets.crm.wirte", "CRM_READ_TOKEN"]);
  });

  it("the executor is still told to export its write variable", () => {
    const err = thrown(() => loadConfig({ env: { ...EXECUTOR_ENV, CRM_READ_TOKEN: "r" }, role: "executor", cwd: dirWith(CRM) }));
    expect(err.problems).toEqual([expect.objectContaining({ key: "CRM_WRITE_TOKEN" })]);
  });

  it("a value that interpolation cannot change is named with the unset variables, at once", () => {
    const err = thrown(() => loadConfig({ env: {}, role: "server", cwd: dirWith(CRM.replace("baseUrl: http://127.0.0.1:4010", "baseUrl: not-a-url")) }));
    expect(err.problems.map((p) => p.key)).toEqual(["targets.crm.baseUrl", "CRM_READ_TOKEN"]);
  });

  it("a value with a ${VAR} in it is checked once it is resolved", () => {
    const yaml = CRM.replace("baseUrl: http://127.0.0.1:4010", "baseUrl: ${CRM_URL}");
    const config = loadConfig({ env: { CRM_URL: "http://127.0.0.1:4010", CRM_READ_TOKEN: "r" }, role: "server", cwd: dirWith(yaml) });
    expect(config.targets.crm).toMatchObject({ baseUrl: "http://127.0.0.1:4010" });
    const err = thrown(() => loadConfig({ env: { CRM_URL: "nope", CRM_READ_TOKEN: "r" }, role: "server", cwd: dirWith(yaml) }));
    expect(err.problems.map((p) => p.key)).toEqual(["targets.crm.baseUrl"]);
  });

  it.each<[name: string, yaml: string, key: string, near: string]>([
    ["a nested key", "defaults:\n  aprovers: [U0ALICE]\n", "defaults.aprovers", "approvers"],
    ["a key of another case", "slack:\n  ReviewChannel: C0REVIEW\n", "slack.ReviewChannel", "reviewChannel"],
    ["an http.json target's key", CRM.replace("baseUrl:", "baseURL:"), "targets.crm.baseURL", "baseUrl"],
    [
      "a postgres.row target's key",
      'targets:\n  db:\n    adapter: postgres.row\n    read: { url: "postgres://r@h/db" }\n    tabels: { t: { key: [id] } }\n',
      "targets.db.tabels",
      "tables",
    ],
  ])("did you mean: %s", (_name, yaml, key, near) => {
    const err = thrown(() => loadConfig({ env: { CRM_READ_TOKEN: "r" }, role: "server", cwd: dirWith(yaml) }));
    expect(err.problems[0]).toEqual({ key, message: `unknown key '${key.split(".").at(-1)}'; did you mean '${near}'?` });
  });

  it("an unknown key that is near nothing points at countersign.example.yml", () => {
    const err = thrown(() => loadConfig({ env: {}, role: "server", cwd: dirWith("bogus: 1\n") }));
    expect(err.problems).toEqual([{ key: "bogus", message: "unknown key 'bogus'; see countersign.example.yml for the keys Countersign reads" }]);
    expect(err.message).toBe(`Invalid configuration (${err.message.slice(23).split(")")[0]}): bogus: ${err.problems[0]!.message}`);
  });

  it("nearMiss allows one edit in a short word, two in a longer one, and counts a swap as one", () => {
    expect(nearMiss("targest", ["targets", "admins"])).toBe("targets");
    expect(nearMiss("tagrets", ["targets"])).toBe("targets");
    expect(nearMiss("ttls", ["ttl"])).toBe("ttl");
    expect(nearMiss("tl", ["ttl", "url"])).toBe("ttl");
    expect(nearMiss("abcd", ["ttl"])).toBeUndefined();
    expect(nearMiss("environmnt", ["environment", "executor"])).toBe("environment");
  });
});

describe("one-shot commands resolve no target credential", () => {
  it("load countersign.example.yml with no variable set", () => {
    const config = loadConfig({ env: { COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml") }, role: "cli", cwd: root });
    expect(Object.keys(config.targets)).toEqual(["crm", "crmdb"]);
    expect(config.targets.crm?.policy?.requiredApprovals).toBe(2);
  });

  it("hold no read credential even when every variable is set", () => {
    const env = { CRM_READ_TOKEN: "read-secret-1", CRM_WRITE_TOKEN: "write-secret-1", CRMDB_READ_URL: "postgres://r:read-secret-2@h/db" };
    const config = loadConfig({ env, role: "cli", cwd: dirWith(EXAMPLE) });
    expect(JSON.stringify(config)).not.toMatch(/read-secret|write-secret/);
  });

  it("still refuse a misshapen file", () => {
    const err = thrown(() => loadConfig({ env: {}, role: "cli", cwd: dirWith(EXAMPLE.replace("\ntargets:", "\ntargest:")) }));
    expect(err.problems).toEqual([{ key: "targest", message: "unknown key 'targest'; did you mean 'targets'?" }]);
  });
});

describe("the server on countersign.example.yml", () => {
  it("names every unset variable on one line, and no write variable", () => {
    const err = thrown(() => loadConfig({ env: {}, role: "server", cwd: dirWith(EXAMPLE) }));
    expect(err.message.split("\n")).toHaveLength(1);
    expect(err.message).toContain("CRM_READ_TOKEN, CRMDB_READ_URL: are not set; export them");
    expect(err.message).not.toMatch(/WRITE/);
  });

  it("with DATABASE_URL, names the grant key with the variables, at once", () => {
    const err = thrown(() => loadConfig({ env: { DATABASE_URL: "postgres://db.example/cs" }, role: "server", cwd: dirWith(EXAMPLE) }));
    expect(err.problems.map((p) => p.key)).toEqual(["CRM_READ_TOKEN, CRMDB_READ_URL", "COUNTERSIGN_GRANT_PRIVATE_KEY"]);
    expect(err.message).toContain(" + environment)");
  });
});
