/**
 * Waits `ms`, or less if `signal` aborts first (at once if it already has). Resolves either way:
 * the waits that use it (a decision held through a database outage, a Home publish spaced out)
 * go on, quickly, when their server stops. node:timers/promises' setTimeout rejects instead.
 */
export function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
