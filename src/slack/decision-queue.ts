/** How many Slack decisions run at once: enough to keep the database busy, few enough that acks still get the event loop. */
export const DECISION_CONCURRENCY = 4;

/**
 * A decision still running after this long (held on a row lock, waiting for a database that is
 * down) is waiting, not using the event loop: it gives its place to the next one, so a few stuck
 * decisions cannot stall every other click's.
 */
export const DECISION_SLOT_MS = 1000;

/**
 * Work a Slack listener has promised after its ack (deciding, telling the clicker why not): it
 * starts on a later turn of the event loop, once the answers to the requests already read have
 * been written, and at most `concurrency` tasks run at a time (a task past `slotMs` no longer
 * counts), in the order they came. A burst of clicks then costs each click its ack, not the
 * database writes of the clicks before it.
 * `drain()` waits for everything queued, so a stopping server loses no decision it acknowledged.
 */
export class DecisionQueue {
  private readonly waiting: (() => Promise<void>)[] = [];
  /** Started and not finished. */
  private running = 0;
  /** Running tasks that still count against the concurrency (not yet past slotMs). */
  private holdingSlot = 0;
  private drained: (() => void)[] = [];

  constructor(
    private readonly onError: (err: unknown) => void,
    private readonly concurrency = DECISION_CONCURRENCY,
    private readonly slotMs = DECISION_SLOT_MS,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new Error(`DecisionQueue: concurrency must be a whole number of at least 1, got ${concurrency}`);
    if (!(slotMs > 0)) throw new Error(`DecisionQueue: slotMs must be more than 0, got ${slotMs}`);
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
    while (this.holdingSlot < this.concurrency && this.waiting.length > 0) {
      const task = this.waiting.shift()!;
      this.running++;
      this.holdingSlot++;
      let holding = true;
      const giveUpSlot = () => {
        if (!holding) return;
        holding = false;
        this.holdingSlot--;
      };
      const slow = setTimeout(() => {
        giveUpSlot();
        this.startWhatFits();
      }, this.slotMs);
      void Promise.resolve()
        .then(task)
        .catch(this.onError)
        .finally(() => {
          clearTimeout(slow);
          giveUpSlot();
          this.running--;
          if (this.size === 0) for (const resolve of this.drained.splice(0)) resolve();
          else setImmediate(() => this.startWhatFits());
        });
    }
  }
}
