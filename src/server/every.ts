/**
 * Runs `task` every `ms` until stopped, never overlapping itself. A failing run is reported
 * and the loop carries on: a database hiccup must not stop expiry or delivery for good.
 */
export function every(ms: number, task: () => Promise<unknown>, onError: (err: unknown) => void): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    running = (async () => {
      try {
        await task();
      } catch (err) {
        if (!stopped) onError(err);
      }
    })().finally(() => {
      if (!stopped) timer = setTimeout(tick, ms);
    });
  };
  timer = setTimeout(tick, ms);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
