import { describe, expect, it } from "vitest";
import { policyCheck } from "../../../src/cli/policy-check.ts";
import { useConfigFiles } from "../../support/config-files.ts";

const { file, load, problems } = useConfigFiles("countersign-read-rights-");

describe("browser.readers and admins", () => {
  it("default: no readers list (anyone signed in reads) and no admins", () => {
    const config = load("");
    expect(config.browser.readers).toBeUndefined();
    expect(config.admins).toEqual([]);
  });

  it("take Slack user ids and user groups", () => {
    const config = load("browser: { readers: [U0AUDITOR, W0GRID, S0SECURITY] }\nadmins: [U0OPS, S0ONCALL]\n");
    expect(config.browser.readers).toEqual(["U0AUDITOR", "W0GRID", "S0SECURITY"]);
    expect(config.admins).toEqual(["U0OPS", "S0ONCALL"]);
    expect(load("browser: { readers: [] }\n").browser.readers).toEqual([]);
  });

  it("anything else is refused, naming the key and what an id looks like", () => {
    expect(problems("browser: { readers: [alice@example.com] }\n")).toEqual([
      { key: "browser.readers.0", message: expect.stringMatching(/Slack user id .*or user group id/) },
    ]);
    expect(problems("admins: U0OPS\n").map((p) => p.key)).toEqual(["admins"]);
    expect(problems('admins: [U0OPS, "#ops"]\n').map((p) => p.key)).toEqual(["admins.1"]);
  });

  it("policy check says who may read", () => {
    const lines: string[] = [];
    policyCheck([file("browser: { readers: [S0SECURITY] }\nadmins: [U0OPS]\n")], {}, (l) => lines.push(l));
    expect(lines).toContain("Who may read plans: admins (U0OPS) read all; each plan's approvers read it; besides them only browser.readers (S0SECURITY)");
    lines.length = 0;
    policyCheck([file("")], {}, (l) => lines.push(l));
    expect(lines).toContain("Who may read plans: admins (none) read all; each plan's approvers read it; anyone signed in reads all (no browser.readers)");
  });
});
