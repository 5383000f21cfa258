import { median, type FigureSource } from "../figure.ts";
import { countersignCommand, timeToExit } from "../processes.ts";

/** `countersign --help`: what every one-shot command pays before doing anything, against bare `node -e 0`. */
export const help: FigureSource = {
  title: "countersign --help",
  async measure(pace) {
    const RUNS = pace.runs.help;
    const cli = countersignCommand();
    await timeToExit([...cli.args, "--help"]); // the first run pays the disk cache
    const helpRuns: number[] = [];
    const nodeRuns: number[] = [];
    // Interleaved, so both see the same load.
    for (let i = 0; i < RUNS; i++) {
      helpRuns.push(await timeToExit([...cli.args, "--help"]));
      nodeRuns.push(await timeToExit(["-e", "0"]));
    }
    return [
      {
        name: "help_seconds",
        value: median(helpRuns),
        unit: "s",
        goal: { below: 0.5 },
        baseline: { label: "node -e 0", value: median(nodeRuns) },
        ...(cli.note ? { note: cli.note } : {}),
      },
    ];
  },
};
