import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { policyCheck } from "../../../src/cli/policy-check.ts";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-watch-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(targets: string): string {
  const p = path.join(dir, `c${++n}.yml`);
  writeFileSync(p, `defaults: { approvers: [U0ALICE] }\ntargets:\n${targets}`);
  return p;
}
const load = (targets: string) => loadConfig({ env: { COUNTERSIGN_CONFIG: file(targets) }, role: "server", cwd: dir });

describe("targets.<name>.watch", () => {
  it("re-reads every 30 s unless told; 0 turns it off", () => {
    const config = load(
      '  crm: { adapter: http.json, baseUrl: "http://127.0.0.1:4010" }\n  erp: { adapter: http.json, baseUrl: "http://127.0.0.1:4011", watch: { intervalSeconds: 0 } }\n',
    );
    expect(config.targets.crm!.watch.intervalSeconds).toBe(30);
    expect(config.targets.erp!.watch.intervalSeconds).toBe(0);
  });

  it("refuses a negative or fractional interval and unknown keys, naming the key", () => {
    for (const watch of ["{ intervalSeconds: -1 }", "{ intervalSeconds: 1.5 }", "{ every: 10 }"]) {
      try {
        load(`  crm: { adapter: http.json, baseUrl: "http://127.0.0.1:4010", watch: ${watch} }\n`);
        throw new Error(`watch ${watch} was accepted`);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).problems.map((p) => p.key).join(" ")).toMatch(/^targets\.crm\.watch/);
      }
    }
  });

  it("policy check shows each target's watch interval and precondition", () => {
    const lines: string[] = [];
    policyCheck(
      [
        file(
          '  crm: { adapter: http.json, baseUrl: "http://127.0.0.1:4010", watch: { intervalSeconds: 10 } }\n  erp: { adapter: http.json, baseUrl: "http://127.0.0.1:4011", precondition: digest, watch: { intervalSeconds: 0 } }\n',
        ),
      ],
      {},
      (l) => lines.push(l),
    );
    expect(lines).toContain("  watch:      re-read every 10 s while a plan on it is pending or approved (targets.crm.watch.intervalSeconds)");
    expect(lines).toContain("  watch:      off: open plans are re-checked only at Approve and by the executor (targets.erp.watch.intervalSeconds)");
    expect(lines.filter((l) => l.startsWith("  precondition: etag"))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith("  precondition: digest") && l.endsWith("(targets.erp.precondition)"))).toHaveLength(1);
  });
});
