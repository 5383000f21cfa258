import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startCli } from "../support/cli.ts";
import { freePort } from "../support/free-port.ts";
import { waitFor } from "../support/wait-for.ts";

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("countersign start killed hard", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-orphan-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("takes its executor with it: the child holding the write credentials does not live on as an orphan", async () => {
    const app = await startCli(["start"], { cwd: dir, env: { PORT: String(await freePort()) }, ready: /Ctrl-C stops everything/, timeoutMs: 180_000 });
    const executorPid = Number(/executor: pid (\d+)/.exec(app.output())?.[1]);
    expect(executorPid).toBeGreaterThan(0);
    try {
      app.child.kill("SIGKILL");
      // SIGKILL gives start no chance to stop its child: the child notices its parent is gone.
      await waitFor("the executor to exit after start was killed", () => !alive(executorPid), 60_000);
      expect(app.output()).toContain(`its parent 'countersign start' (pid ${app.child.pid}) is gone, so it stops too`);
    } finally {
      if (alive(executorPid)) process.kill(executorPid, "SIGKILL");
    }
  }, 300_000);
});
