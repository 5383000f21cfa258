/**
 * Polls until `check` returns a value other than undefined/false, or fails after `timeoutMs`
 * naming what it waited for. The default bound is generous because it is only reached when
 * something is wrong; a loaded machine must not turn a slow pass into a failure.
 */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
