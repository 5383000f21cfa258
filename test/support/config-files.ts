import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll } from "vitest";
import { ConfigError, loadConfig, type Config } from "../../src/config/load.ts";

const BASE = 'defaults: { approvers: [U0ALICE] }\ntargets:\n  crm: { adapter: http.json, baseUrl: "http://127.0.0.1:4010" }\n';

/**
 * Config files for one test file, each a valid minimal config (one approver, one http.json
 * target) followed by the YAML a test adds: `file` writes one and names it (for commands that
 * take a path), `load` loads it as the server does, `problems` answers what loadConfig refuses
 * it with, and fails the test when it loads. `base` replaces the minimal config the YAML follows
 * (ending inside `targets:` so a test's YAML may add targets).
 */
export function useConfigFiles(
  prefix: string,
  base = BASE,
): {
  file(yaml: string): string;
  load(yaml: string): Config;
  problems(yaml: string): { key: string; message: string }[];
} {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const file = (yaml: string): string => {
    const named = path.join(dir, `c${++n}.yml`);
    writeFileSync(named, base + yaml);
    return named;
  };
  const load = (yaml: string): Config => loadConfig({ env: { COUNTERSIGN_CONFIG: file(yaml) }, role: "server", cwd: dir });
  const problems = (yaml: string) => {
    try {
      load(yaml);
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    throw new Error("expected a ConfigError");
  };
  return { file, load, problems };
}
