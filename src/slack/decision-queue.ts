/** How many Slack decisions run at once: enough to keep the database busy, few enough that acks still get the event loop. */
export const DECISION_CONCURRENCY = 4;

/**
 * Work a Slack listener has promised after its ack (deciding, telling the clicker why not): it
 * starts on a later turn of the event loop, once the answers to the requests already read have
 * been written, and at most `concurrency` tasks run at a time, in the order they came. A burst of
 * clicks then costs each click its ack, not the database writes of the clicks before it.
 * `drain()` waits for everything queued, so a stopping server loses no decision it acknowledged.
 */
export class DecisionQueue {
  private readonly waiting: (() => Promise<void>)[] = [];
  private running = 0;
  private drained: (() => void)[] = [];

  constructor(
    private readonly onError: (err: unknown) => void,
    private readonly concurrency = DECISION_CONCURRENCY,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`DecisionQueue: concurrency must be a whole number of at least 1, got ${concurrency}`);
  }

  /** Tasks waiting or running. */
  get size(): number {
    return this.waiting.length + this.running;
  }

  /** Queues `task`; it never runs in the caller's turn. A task that throws is reported to onError. */
  push(task: () => Promise<void>): void {
    this.waiting.push(task);
    // setImmediate runs after the poll phase: the requests read in this turn are answered first.
    setImmediate(() => this.startWhatFits());
  }

  /** Resolves once nothing is waiting or running (tasks queued meanwhile included). */
  drain(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private startWhatFits(): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      const task = this.waiting.shift()!;
      this.running++;
      void Promise.resolve()
        .then(task)
        .catch(this.onError)
        .finally(() => {
          this.running--;
          if (this.size === 0) for (const resolve of this.drained.splice(0)) resolve();
          else setImmediate(() => this.startWhatFits());
        });
    }
  }
}
