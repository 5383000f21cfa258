/**
 * SIGINT and SIGTERM for the long-running commands (`start`, `serve`, `executor`), caught from the
 * moment the command begins rather than once it is up.
 *
 * Why from the beginning: a command that prints its ready line and only then listens for signals
 * dies of the signal's default action when one arrives in between. `start` did: SIGINT sent as
 * soon as its banner appeared killed it outright in 3 of 10 runs on a loaded machine (the write
 * woke the reader, which signalled before `start` ran its next line), skipping every shutdown step
 * and leaving its executor child behind.
 *
 * A signal during start-up is kept and honoured the moment start-up completes, so what start-up
 * began (an executor child, a listening server, a demo target) is stopped in order, never left
 * half-made. A second signal quits at once: the listeners are gone by then, so the default action
 * applies (a start-up stuck waiting for a database should not need more than two Ctrl-Cs).
 */
export interface StopSignals {
  /**
   * Runs until SIGINT/SIGTERM (or one that already came during start-up), or until `failed`
   * settles (something the command depends on died), then calls `stop` once. Resolves to the exit
   * code: 0 after a signal, 1 after a failure, a failed stop, or a stop still running after
   * `bound.ms` (what a supervisor's grace period is sized by: the exit comes within it).
   */
  untilStopped(stop: () => Promise<void>, failed?: Promise<string>, bound?: StopBound): Promise<number>;
}

export interface StopBound {
  ms: number;
  /** The setting that gives `ms`, named when it runs out. */
  setting: string;
}

const SIGNALS = ["SIGINT", "SIGTERM"] as const;

export function catchStopSignals(log: (line: string) => void = (line) => process.stderr.write(line + "\n")): StopSignals {
  let signalled = false;
  let onStop: (() => void) | undefined;
  const onSignal = () => {
    if (signalled) return;
    signalled = true;
    for (const signal of SIGNALS) process.off(signal, onSignal);
    if (onStop) onStop();
    else log("countersign: stopping as soon as start-up completes (a second Ctrl-C quits at once)");
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);

  let used = false;
  return {
    untilStopped(stop, failed, bound) {
      if (used) throw new Error("untilStopped is called once per command");
      used = true;
      return new Promise((resolve) => {
        let stopping = false;
        const finish = (code: number) => {
          if (stopping) return;
          stopping = true;
          for (const signal of SIGNALS) process.off(signal, onSignal);
          const late = bound
            ? setTimeout(() => {
                log(`countersign: still stopping after ${bound.ms / 1000} s (${bound.setting}); exiting now`);
                resolve(1);
              }, bound.ms)
            : undefined;
          stop()
            .then(
              () => resolve(code),
              (err: unknown) => {
                log(`countersign: shutdown failed: ${(err as Error).message}`);
                resolve(1);
              },
            )
            .finally(() => clearTimeout(late));
        };
        onStop = () => finish(0);
        void failed?.then((why) => {
          if (stopping) return;
          log(`countersign: ${why}`);
          finish(1);
        });
        if (signalled) finish(0);
      });
    },
  };
}
