/**
 * `start` runs its executor as a child. If `start` dies without stopping it (SIGKILL, a crash),
 * the child would live on as an orphan holding the write credentials and retrying claims against
 * a server that is gone, and would keep the terminal's pipes open. So `start` names itself in
 * COUNTERSIGN_PARENT_PID and the child stops once its parent is no longer that process
 * (`process.ppid` is read afresh each time: an orphan is re-parented to init or a subreaper).
 */
export const PARENT_PID_ENV = "COUNTERSIGN_PARENT_PID";

export function whenParentGone(env: NodeJS.ProcessEnv, everyMs = 1000): Promise<string> | undefined {
  const parent = Number(env[PARENT_PID_ENV]);
  if (!Number.isInteger(parent) || parent <= 0) return undefined;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(timer);
      resolve(`its parent 'countersign start' (pid ${parent}) is gone, so it stops too`);
    }, everyMs);
    timer.unref();
  });
}
