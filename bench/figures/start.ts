import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { median, type FigureSource } from "../figure.ts";
import { freePort } from "../../test/support/free-port.ts";
import { cleanEnv, countersignCommand, idleNodeRssMb, settledTreeRssMb, startUntilReady, type Started } from "../processes.ts";

const READY = /Ctrl-C stops everything/;

/** Other figures find a free port here too. */
export { freePort };

/**
 * `countersign start` as a newcomer runs it: the embedded database, the demo target and the
 * executor child. Fresh = an empty directory; restart = the same directory again. The RSS is the
 * whole process tree (server, which also serves the demo target, and the executor) once idle.
 */
export const start: FigureSource = {
  title: "countersign start",
  async measure(pace) {
    const RUNS = pace.runs.start;
    const cli = countersignCommand();
    const fresh: number[] = [];
    const restart: number[] = [];
    const rss: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const cwd = mkdtempSync(path.join(os.tmpdir(), "countersign-bench-start-"));
      try {
        const run = async (): Promise<Started> =>
          startUntilReady([...cli.args, "start"], { cwd, env: cleanEnv({ PORT: String(await freePort()) }), ready: READY });
        const first = await run();
        try {
          fresh.push(first.readySeconds);
          rss.push(await settledTreeRssMb(first.child.pid!, { minProcesses: 2 }));
        } finally {
          await first.stop();
        }
        const again = await run();
        restart.push(again.readySeconds);
        await again.stop();
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    }
    const note = cli.note ? { note: cli.note } : {};
    return [
      { name: "start_ready_fresh_seconds", value: median(fresh), unit: "s", goal: { below: 4 }, ...note },
      { name: "start_ready_restart_seconds", value: median(restart), unit: "s", goal: { below: 2 }, ...note },
      {
        name: "start_total_rss_mb",
        value: median(rss),
        unit: "MB",
        goal: { below: 350 },
        baseline: { label: "idle node", value: await idleNodeRssMb() },
        ...note,
      },
    ];
  },
};
