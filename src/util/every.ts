/** How a loop tells the world about its runs: every failure, and the first success after one. */
export interface LoopReport {
  /** `startedAt` (Date.now() when the failed work began) lets a late failure of work begun before a recovery be told apart. */
  failed(err: unknown, startedAt?: number): void;
  succeeded?(): void;
}

/**
 * Runs `task` every `ms` until stopped, never overlapping itself. A failing run is reported
 * and the loop carries on: a database hiccup must not stop expiry or delivery for good.
 */
export function every(ms: number, task: () => Promise<unknown>, report: LoopReport): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    running = (async () => {
      try {
        await task();
        report.succeeded?.();
      } catch (err) {
        if (!stopped) report.failed(err);
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

/**
 * A loop's report that says one line when the database becomes unreachable and one when the
 * loop works again, instead of one error per tick for the length of an outage. Other failures
 * are reported every time: they are not expected to cure themselves.
 */
export function outageAwareReport(
  what: string,
  isOutage: (err: unknown) => boolean,
  log: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void; info(obj: object, msg: string): void },
): LoopReport {
  let outageSince: number | undefined;
  let resumedAt: number | undefined;
  return {
    failed(err, startedAt) {
      if (!isOutage(err)) return log.error({ err }, `${what} failed; retrying`);
      if (outageSince !== undefined) return;
      // Work begun before the last recovery (a lane drain stuck on a dead connection) failing
      // afterwards belongs to the outage already reported, not to a new one.
      if (startedAt !== undefined && resumedAt !== undefined && startedAt < resumedAt) return;
      outageSince = Date.now();
      log.warn(
        { code: (err as { code?: unknown }).code ?? (err as { cause?: { code?: unknown } }).cause?.code },
        `${what} paused: the database is unreachable; retrying until it returns`,
      );
    },
    succeeded() {
      if (outageSince === undefined) return;
      log.info({ pausedMs: Date.now() - outageSince }, `${what} resumed: the database is back`);
      outageSince = undefined;
      resumedAt = Date.now();
    },
  };
}
