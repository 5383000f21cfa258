import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startCli } from "./cli.ts";
import { crmTargetYaml } from "./crm-target-yaml.ts";
import { READ_TOKEN, testGrantKeys, WRITE_TOKEN } from "./harness.ts";

/**
 * The countersign.yml a spawned executor reads: one http.json target `crm` at targetUrl whose
 * credentials come from CRM_READ / CRM_WRITE, in a fresh temporary directory (the caller removes
 * it). The server side of the same tests is configured in code (testConfig); this file is what
 * the executor process, like a user's, loads from disk.
 */
export function writeExecutorConfig(targetUrl: string, options: { approvers: readonly string[]; prefix: string }): { dir: string; file: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), options.prefix));
  const file = path.join(dir, "countersign.yml");
  writeFileSync(
    file,
    ["environment: test", `defaults: { approvers: [${options.approvers.join(", ")}] }`, ...crmTargetYaml(targetUrl, { write: true })].join("\n"),
  );
  return { dir, file };
}

/**
 * Starts `countersign executor` (the built CLI) as a user runs it: the countersign.yml
 * writeExecutorConfig wrote in dir, the server at serverUrl, the test grant key's public half and
 * the CRM tokens the test target accepts. Resolves once it says it is running; the caller stops it.
 */
export async function spawnExecutor(options: { dir: string; serverUrl: string; executorToken: string }): Promise<SpawnedExecutor> {
  const { publicPem } = await testGrantKeys();
  return startCli(["executor"], {
    cwd: options.dir,
    env: {
      COUNTERSIGN_CONFIG: path.join(options.dir, "countersign.yml"),
      COUNTERSIGN_URL: options.serverUrl,
      COUNTERSIGN_EXECUTOR_TOKEN: options.executorToken,
      COUNTERSIGN_GRANT_PUBLIC_KEY: publicPem,
      CRM_READ: READ_TOKEN,
      CRM_WRITE: WRITE_TOKEN,
      LOG_LEVEL: "info",
    },
    ready: /executor running/,
    timeoutMs: 120_000,
  });
}

export type SpawnedExecutor = Awaited<ReturnType<typeof startCli>>;
