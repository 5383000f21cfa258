import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/logger.ts";

/**
 * The logger writes stdout asynchronously (src/logging/logger.ts). These run a real child process that
 * logs many lines (far more than a pipe holds, so most are still queued) and then exits at once,
 * and check that every line reached the parent, the last one included.
 */
const LOGGER = fileURLToPath(new URL("../../src/logging/logger.ts", import.meta.url));
const LINES = 3000;

function runChild(ending: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `
    const { createLogger } = await import(${JSON.stringify(LOGGER)});
    const logger = createLogger("info");
    for (let i = 0; i < ${LINES}; i++) logger.info({ i, filler: "x".repeat(200), token: "s3cret" }, "line");
    logger.info("last line");
    ${ending}
  `;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
      },
    );
  });
}

function parsed(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("asynchronous log lines are flushed at exit", () => {
  it("stdout is an asynchronous destination", () => {
    const stream = (createLogger("info") as unknown as Record<symbol, { sync: boolean }>)[pino.symbols.streamSym];
    expect(stream?.sync).toBe(false);
  });

  it("keeps every line, the last one included, through process.exit right after logging", async () => {
    const { code, stdout } = await runChild("process.exit(0);");
    expect(code).toBe(0);
    const lines = parsed(stdout);
    expect(lines).toHaveLength(LINES + 1);
    expect(lines.at(-1)?.msg).toBe("last line");
    expect(lines[0]?.token).toBe("[redacted]");
  });

  it("keeps them through a fatal uncaught error", async () => {
    const { code, stdout, stderr } = await runChild(`throw new Error("boom");`);
    expect(code).toBe(1);
    expect(stderr).toContain("boom");
    const lines = parsed(stdout);
    expect(lines).toHaveLength(LINES + 1);
    expect(lines.at(-1)?.msg).toBe("last line");
  });

  it("keeps them when the process ends on its own", async () => {
    const { code, stdout } = await runChild("");
    expect(code).toBe(0);
    expect(parsed(stdout).at(-1)?.msg).toBe("last line");
  });
});
