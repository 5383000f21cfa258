import type { Database } from "../../store/db.ts";
import type { PauseState, PauseView } from "../context.ts";
import { PAUSE_CHANNEL, readPause } from "./pause.ts";

/** How often a replica re-reads the pause without being told: a lost NOTIFY (a reconnect) costs at most this. */
export const PAUSE_RECHECK_MS = 1000;

/**
 * What this replica believes about the pause, for what it shows (the browser's banner, a held
 * plan's view): updated at once by NOTIFY from whichever replica or CLI paused, and re-read every
 * second as a backstop, so every replica knows within 2 s. Correctness never depends on it: the
 * executor's claim reads the pause table in its own statement.
 */
export class PauseWatch implements PauseView {
  private state: PauseState | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopListening: (() => Promise<void>) | undefined;
  private readonly listeners = new Set<(state: PauseState | undefined) => void>();

  constructor(
    private readonly database: Database,
    private readonly recheckMs = PAUSE_RECHECK_MS,
  ) {}

  async start(): Promise<void> {
    this.stopListening = await this.database.listen(PAUSE_CHANNEL, () => void this.refresh());
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.recheckMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.stopListening?.();
    this.stopListening = undefined;
  }

  /** The pause as this replica last read it. */
  current(): PauseState | undefined {
    return this.state;
  }

  /** Calls back whenever the pause starts, ends or changes; returns how to stop. */
  onChange(listener: (state: PauseState | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Re-reads the pause now (the replica that paused does, so its own next page shows it). */
  async refresh(): Promise<void> {
    // An unreachable database keeps the last known state; the next re-read tries again.
    const next = await readPause(this.database.db).catch(() => this.state);
    const changed = JSON.stringify(next) !== JSON.stringify(this.state);
    this.state = next;
    if (changed) for (const listener of this.listeners) listener(next);
  }
}
