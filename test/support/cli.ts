import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built command, as installed users run it (test/support/global-setup.ts builds it when stale). */
export const BIN = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `countersign` command to completion. */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string | undefined> }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: cliEnv(options.env) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts a long-running `countersign` command; resolves once its output matches `ready`. */
export function startCli(
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined>; ready: RegExp; timeoutMs?: number },
): Promise<{ child: ChildProcess; output: () => string; stop(): Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: cliEnv(options.env) });
    let output = "";
    const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`countersign ${args.join(" ")} did not get ready:\n${output}`));
    }, options.timeoutMs ?? 30_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (options.ready.test(output)) {
        clearTimeout(timer);
        resolve({
          child,
          output: () => output,
          stop: async () => {
            child.kill("SIGINT");
            return exited;
          },
        });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`countersign ${args.join(" ")} exited (${code}) before it was ready:\n${output}`));
    });
  });
}

function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  // A clean environment: the CLI must not pick up the developer's or CI's settings by accident.
  const { PATH, HOME, TMPDIR } = process.env;
  return { PATH, HOME, TMPDIR, LOG_LEVEL: "warn", ...extra };
}
