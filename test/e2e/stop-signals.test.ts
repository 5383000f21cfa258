import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The long-running commands catch SIGINT/SIGTERM from their first line (src/cli/stop-signals.ts).
 * Each test runs a real child process that signals itself with a real signal at a chosen moment of
 * its "start-up", so the moment is exact rather than a race: with the handlers installed only once
 * the command was up (as `start` did), a signal during start-up killed it by the default action,
 * skipping every shutdown step (code null, signal SIGINT), which is what the first test pins.
 */
const STOP_SIGNALS = fileURLToPath(new URL("../../src/cli/stop-signals.ts", import.meta.url));

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function runChild(body: string): Promise<Exit> {
  const script = `
    const { catchStopSignals } = await import(${JSON.stringify(STOP_SIGNALS)});
    const say = (line) => process.stdout.write(line + "\\n");
    const startUp = () => new Promise((resolve) => setTimeout(resolve, 200));
    setInterval(() => {}, 1000); // what a running server's sockets do: keep the process up until it exits
    ${body}
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the child did not exit within 120 s:\n${stdout}\n${stderr}`));
    }, 120_000);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe("stop signals are caught from the first line of a long-running command", () => {
  it("without them, a signal during start-up kills the process outright (what start did)", async () => {
    const exit = await runChild(`
      process.kill(process.pid, "SIGINT");
      await startUp();
      say("never reached");
    `);
    expect([exit.code, exit.signal]).toEqual([null, "SIGINT"]);
    expect(exit.stdout).not.toContain("never reached");
  });

  it("a signal during start-up is kept: start-up completes, then everything it started is stopped in order and the exit is 0", async () => {
    const exit = await runChild(`
      const signals = catchStopSignals();
      process.kill(process.pid, "SIGINT");
      await startUp();
      say("started");
      const code = await signals.untilStopped(async () => say("stopped"));
      say("exit " + code);
      process.exit(code);
    `);
    expect([exit.code, exit.signal]).toEqual([0, null]);
    expect(exit.stdout.trim().split("\n")).toEqual(["started", "stopped", "exit 0"]);
    expect(exit.stderr).toContain("stopping as soon as start-up completes (a second Ctrl-C quits at once)");
  });

  it("a second signal during start-up quits at once", async () => {
    const exit = await runChild(`
      catchStopSignals();
      process.kill(process.pid, "SIGTERM");
      await startUp();
      process.kill(process.pid, "SIGINT");
      await startUp();
      say("never reached");
    `);
    expect([exit.code, exit.signal]).toEqual([null, "SIGINT"]);
    expect(exit.stdout).not.toContain("never reached");
    expect(exit.stderr).toContain("stopping as soon as start-up completes");
  });

  it("once up, SIGTERM stops it once, exit 0; a second signal while it stops quits at once", async () => {
    const calm = await runChild(`
      const signals = catchStopSignals();
      await startUp();
      setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
      const code = await signals.untilStopped(async () => say("stopped"));
      process.exit(code);
    `);
    expect([calm.code, calm.signal, calm.stdout]).toEqual([0, null, "stopped\n"]);
    expect(calm.stderr).toBe("");

    const impatient = await runChild(`
      const signals = catchStopSignals();
      setTimeout(() => process.kill(process.pid, "SIGINT"), 50);
      await signals.untilStopped(async () => {
        say("stopping");
        process.kill(process.pid, "SIGINT");
        await new Promise((resolve) => setTimeout(resolve, 60_000));
      });
    `);
    expect([impatient.code, impatient.signal, impatient.stdout]).toEqual([null, "SIGINT", "stopping\n"]);
  });

  it("when something it depends on dies, it says why and stops with exit 1; a failed stop is exit 1 naming the error", async () => {
    const died = await runChild(`
      const signals = catchStopSignals();
      process.exit(await signals.untilStopped(async () => say("stopped"), Promise.resolve("the executor exited with code 3")));
    `);
    expect([died.code, died.stdout]).toEqual([1, "stopped\n"]);
    expect(died.stderr).toContain("countersign: the executor exited with code 3");

    const failed = await runChild(`
      const signals = catchStopSignals();
      setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
      process.exit(await signals.untilStopped(async () => { throw new Error("the server would not close"); }));
    `);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("countersign: shutdown failed: the server would not close");
  });

  it("a stop still running when its bound runs out is given up: exit 1, naming the setting", async () => {
    const exit = await runChild(`
      const signals = catchStopSignals();
      setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
      const bound = { ms: 300, setting: "shutdownSeconds" };
      process.exit(await signals.untilStopped(() => new Promise((resolve) => setTimeout(resolve, 60_000)), undefined, bound));
    `);
    expect([exit.code, exit.signal]).toEqual([1, null]);
    expect(exit.stderr).toContain("countersign: still stopping after 0.3 s (shutdownSeconds); exiting now");
  });
});
