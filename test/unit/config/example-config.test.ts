import { fileURLToPath } from "node:url";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));

describe("countersign.example.yml", () => {
  it("is a valid config for the server, which never resolves the write credential", () => {
    const config = loadConfig({ env: { COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml"), CRM_READ_TOKEN: "r" }, role: "server", cwd: root });
    expect(config.environment).toBe("production");
    expect(config.targets.crm?.read).toStrictEqual({ headers: { Authorization: "Bearer r" } });
    expect(config.targets.crm).not.toHaveProperty("write");
  });

  it("gives the executor the write credential and the policy it checks grants against", () => {
    const executorEnv = { COUNTERSIGN_URL: "http://127.0.0.1:3000", COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length", COUNTERSIGN_GRANT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\n…" };
    const config = loadConfig({ env: { ...executorEnv, COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml"), CRM_READ_TOKEN: "r", CRM_WRITE_TOKEN: "w" }, role: "executor", cwd: root });
    expect(config.targets.crm?.write).toStrictEqual({ headers: { Authorization: "Bearer w" } });
    expect(config.defaults.grantTtl).toBe(600);
    expect(config.targets.crm?.policy?.grantTtl).toBe(300);
  });

  it("names the missing read variable for the server", () => {
    let error: unknown;
    try {
      loadConfig({ env: { COUNTERSIGN_CONFIG: path.join(root, "countersign.example.yml") }, role: "server", cwd: root });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      { key: "targets.crm.read.headers.Authorization", message: expect.stringContaining("CRM_READ_TOKEN") },
    ]);
  });
});
