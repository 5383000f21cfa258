import { fileURLToPath } from "node:url";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const READ_URL = "postgres://crm_read:r@db.example:5432/crm";
const WRITE_URL = "postgres://crm_write:w@db.example:5432/crm";

describe("countersign.example.yml", () => {
  it("is a valid config for the server, which never resolves the write credential", () => {
    const config = loadConfig({
      env: { COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml"), CRM_READ_TOKEN: "r", CRMDB_READ_URL: READ_URL },
      role: "server",
      cwd: root,
    });
    expect(config.environment).toBe("production");
    expect(config.targets.crm?.read).toStrictEqual({ headers: { Authorization: "Bearer r" } });
    expect(config.targets.crm).not.toHaveProperty("write");
    expect(config.targets.crmdb).toMatchObject({
      adapter: "postgres.row",
      read: { url: READ_URL },
      tables: {
        contacts: { key: ["id"], version: "updated_at", versionSetBy: "trigger", schema: "public" },
        accounts: { key: ["id", "region"], version: "version", versionSetBy: "countersign" },
        notes: { key: ["id"] },
      },
      allow: { ops: ["update", "insert"], tables: ["contacts"] },
    });
    expect(config.targets.crmdb).not.toHaveProperty("write");
  });

  it("gives the executor the write credential and the policy it checks grants against", () => {
    const executorEnv = {
      COUNTERSIGN_URL: "http://127.0.0.1:3000",
      COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length",
      COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\n…",
    };
    const config = loadConfig({
      env: {
        ...executorEnv,
        COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml"),
        CRM_READ_TOKEN: "r",
        CRM_WRITE_TOKEN: "w",
        CRMDB_READ_URL: READ_URL,
        CRMDB_WRITE_URL: WRITE_URL,
      },
      role: "executor",
      cwd: root,
    });
    expect(config.targets.crm?.write).toStrictEqual({ headers: { Authorization: "Bearer w" } });
    expect(config.targets.crmdb?.write).toStrictEqual({ url: WRITE_URL });
    expect(config.defaults.grantTtl).toBe(600);
    expect(config.targets.crm?.policy?.grantTtl).toBe(300);
  });

  it("names every missing read variable for the server in one problem, and no write variable", () => {
    let error: unknown;
    try {
      loadConfig({ env: { COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml") }, role: "server", cwd: root });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      {
        key: "CRM_READ_TOKEN, CRMDB_READ_URL",
        message:
          "are not set; export them (targets.crm.read.headers.Authorization uses ${CRM_READ_TOKEN}, targets.crmdb.read.url uses ${CRMDB_READ_URL}), or change those values",
      },
    ]);
    expect((error as ConfigError).message).not.toContain("\n");
    expect((error as ConfigError).message).not.toMatch(/WRITE/);
  });
});
