/**
 * Runs until SIGINT/SIGTERM, or until `failed` settles (something the command depends on died),
 * then stops everything once. Resolves to the exit code: 0 after a signal, 1 after a failure.
 */
export function untilStopped(stop: () => Promise<void>, failed?: Promise<string>): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const finish = (code: number) => {
      if (stopping) return;
      stopping = true;
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      stop().then(() => resolve(code), (err: unknown) => {
        process.stderr.write(`countersign: shutdown failed: ${(err as Error).message}\n`);
        resolve(1);
      });
    };
    const onSignal = () => finish(0);
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    void failed?.then((why) => {
      if (stopping) return;
      process.stderr.write(`countersign: ${why}\n`);
      finish(1);
    });
  });
}
