import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * A long-running command outlives a query the PostgreSQL driver rejects, unawaited, when its
 * connection drops (src/cli/database-disconnects.ts); any other unhandled rejection still ends it.
 * Real child processes, as the commands run.
 */
const MODULE = fileURLToPath(new URL("../../src/cli/database-disconnects.ts", import.meta.url));

function runChild(rejection: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `
    const { surviveDatabaseDisconnects } = await import(${JSON.stringify(MODULE)});
    surviveDatabaseDisconnects();
    ${rejection};
    setTimeout(() => { process.stdout.write("still up\\n"); process.exit(0); }, 300);
  `;
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

describe("unhandled rejections in a long-running command", () => {
  it("a query rejected with CONNECTION_CLOSED that nobody awaits is reported, and the process carries on", async () => {
    const exit = await runChild(`Promise.reject(Object.assign(new Error("write CONNECTION_CLOSED 127.0.0.1:5432"), { code: "CONNECTION_CLOSED" }))`);
    expect(exit.code).toBe(0);
    expect(exit.stdout).toBe("still up\n");
    expect(exit.stderr).toContain("a database query lost its connection with nobody waiting for it (CONNECTION_CLOSED)");
  });

  it("any other unhandled rejection still ends the process, naming the error", async () => {
    const exit = await runChild(`Promise.reject(new Error("a bug of ours"))`);
    expect(exit.code).toBe(1);
    expect(exit.stdout).toBe("");
    expect(exit.stderr).toContain("a bug of ours");
  });
});
