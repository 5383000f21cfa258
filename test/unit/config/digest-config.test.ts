import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, type Config } from "../../../src/config/load.ts";
import { DIGEST_AFTER_SECONDS } from "../../../src/config/schema.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-digest-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BASE = "defaults: { approvers: [U0ALICE] }\ntargets:\n  crm: { adapter: http.json, baseUrl: \"http://127.0.0.1:4010\" }\n";
let n = 0;
function file(yaml: string): string {
  const p = path.join(dir, `c${++n}.yml`);
  writeFileSync(p, BASE + yaml);
  return p;
}
const load = (yaml: string): Config => loadConfig({ env: { COUNTERSIGN_CONFIG: file(yaml) }, role: "server", cwd: dir });
function problems(yaml: string): { key: string; message: string }[] {
  try {
    load(yaml);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("slack.digest.afterSeconds", () => {
  it("defaults to 30 seconds, whether the block is absent or empty", () => {
    expect(DIGEST_AFTER_SECONDS).toBe(30);
    expect(load("").slack.digest).toBeUndefined();
    expect(load("slack: { digest: {} }\n").slack.digest).toEqual({ afterSeconds: 30 });
  });

  it("takes whole seconds, 0 meaning never", () => {
    expect(load("slack: { digest: { afterSeconds: 0 } }\n").slack.digest).toEqual({ afterSeconds: 0 });
    expect(load("slack: { digest: { afterSeconds: 90 } }\n").slack.digest).toEqual({ afterSeconds: 90 });
  });

  it("refuses what is not a number of seconds, naming the key", () => {
    for (const bad of ["-1", "1.5", "\"soon\"", "3601"]) {
      expect(problems(`slack: { digest: { afterSeconds: ${bad} } }\n`)).toEqual([{ key: "slack.digest.afterSeconds", message: expect.any(String) }]);
    }
    expect(problems("slack: { digest: { after: 5 } }\n")[0]?.key).toContain("slack.digest");
  });
});
