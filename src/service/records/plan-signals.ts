import { EventEmitter } from "node:events";
import { sql, type SQL } from "drizzle-orm";
import type { Claim } from "../../contract/executor-api.ts";
import type { ClaimHandOff, PlanSignals } from "../context.ts";
import type { Database } from "../../store/db.ts";

export const PLAN_CHANNEL = "countersign_plans";
const ANY_PLAN = Symbol("any plan");
/** How long an approval that woke no executor is kept for the next to wait: an executor's re-check period, the most missing it costs. */
const UNHEEDED_MS = 1000;

/**
 * Wakes whoever waits on a plan (agents' long-polls, pages) or on any plan (the list page) when
 * it changes, and executors waiting for work when a plan becomes theirs to claim. Changes are
 * announced with NOTIFY inside the transaction that makes them, so waiters in every replica hear
 * of them only once they are committed. Waiters still re-check on a slow timer, so a lost
 * notification (a reconnect) delays them by seconds, never forever; that timer is also how
 * executors find a lease that ran out.
 *
 * The payload is "<plan id> <status after the change>". Executors hear only of plans that became
 * approved, and an approval wakes one of this replica's waiting executors, the longest waiting:
 * one approval is work for one executor. Waking every waiter on every change (a submit, a vote
 * short of the quorum, a claim, an outcome) sent each into a claim transaction that found
 * nothing, three statements apiece. An executor woken for a plan another replica's took finds
 * nothing and waits again; one that is not woken finds remaining work at its re-check.

 *
 * An approval that reaches its quorum on this replica while one of its executors waits takes
 * that executor out of the queue (takeClaimer) and claims the plan for it in its own transaction
 * (decide.ts, claimLocked): the executor's wait ends with the claim, with no NOTIFY round and no
 * claim transaction of its own between the click and the write.
 *
 * An executor reads (claimApproved) before it waits, and an approval heard in between, with no
 * other executor queued, would wake nobody. Such an approval is kept for UNHEEDED_MS, and the
 * next executor to wait looks at once. Executors do not arm their wait before the read instead:
 * queued while it claims one plan, an executor would take the wake-up meant for another.
 */
export class ListeningPlanSignals implements PlanSignals {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  /** Executors waiting for work, longest waiting first (a Set iterates in insertion order). */
  private readonly claimers = new Set<Claimer>();
  /** When approvals that woke no executor were heard (performance.now()), oldest first. */
  private unheeded: number[] = [];
  private stopListening: (() => Promise<void>) | undefined;

  constructor(private readonly database: Database) {}

  async start(): Promise<void> {
    this.stopListening = await this.database.listen(PLAN_CHANNEL, (payload) => {
      const { planId, claimable } = parseAnnouncement(payload);
      this.emitter.emit(planId);
      this.emitter.emit(ANY_PLAN);
      if (claimable) {
        const first = this.claimers.values().next().value;
        if (first) first.settle(undefined);
        else this.unheeded.push(performance.now());
        this.dropStale();
      }
    });
  }

  async stop(): Promise<void> {
    await this.stopListening?.();
    this.stopListening = undefined;
  }

  /**
   * The expression that announces a change: select it inside the transaction that makes the
   * change (it is sent on commit), with the status the change leaves the plan in.
   */
  static announcement(planId: string, status: string): SQL {
    return sql`pg_notify(${PLAN_CHANNEL}, ${announcementPayload(planId, status)})`;
  }

  /**
   * Where a plan (or, without an id, the set of all plans) stands: changes whenever a page
   * showing it would change. Every transition and decision appends an audit event; dead-lettered
   * side effects are on the plan page too. A page remembers the version it was rendered at, and
   * the live stream compares it on connect, so a change between page load and connect is not
   * missed.
   * - One plan: its newest event id. The plan's events are written under its row lock, one
   *   transaction after another, so each commits a larger id than the last.
   * - All plans: how many events have committed. Not the newest id: appends do not wait for
   *   each other, so a smaller id may commit after a larger one was seen. Counted cheaply as
   *   the newest seal's running total plus the events since it (seal-audit.ts): events never
   *   leave, so the count grows with every commit that writes one.
   */
  async version(planId?: string): Promise<string> {
    if (planId === undefined) {
      // The count is a subquery correlated to the seal row, not to a CTE's scalar: planned with
      // an unknown bound, PostgreSQL chose a parallel scan (224 ms at 1 M events, load 15,
      // against 2-14 ms for 5 000 unsealed events this way).
      const [row] = await this.database.rows<{ v: string | number | null }>(sql`
        SELECT coalesce(newest.events_total, 0) + (SELECT count(*) FROM audit_events WHERE xid >= coalesce(newest.xid_to, '0'::xid8)) AS v
          FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT events_total, xid_to FROM audit_seals ORDER BY seq DESC LIMIT 1) AS newest ON true`);
      return String(row?.v ?? 0);
    }
    // The watch's failing-since is on the page too, and changes with no event.
    const [row] = await this.database.rows<{ v: string | number | null; dead: string | number; watch: string | number | null }>(
      sql`SELECT (SELECT max(id) FROM audit_events WHERE plan_id = ${planId}) AS v, (SELECT count(*) FROM outbox WHERE plan_id = ${planId} AND dead_at IS NOT NULL) AS dead,
        (SELECT floor(extract(epoch FROM min(t.failed_since)))::bigint FROM watched_actions w JOIN target_watches t ON t.target = w.target AND t.path = w.path WHERE w.plan_id = ${planId}) AS watch`,
    );
    return `${row?.v ?? 0}.${row?.dead ?? 0}${row?.watch ? `.${row.watch}` : ""}`;
  }

  /** Resolves when any plan may have changed (the list page), or after `ms`. */
  waitAny(ms: number, signal?: AbortSignal): Promise<void> {
    return this.wait(ANY_PLAN, ms, signal);
  }

  /** Resolves when a plan may have become approved (an executor waiting for work), or after `ms`; with a claim when an approval made one for this waiter. */
  waitClaimable(ms: number, signal?: AbortSignal, kids?: readonly string[]): Promise<Claim | undefined> {
    // An aborted waiter leaves an unheeded approval for the next.
    if (signal?.aborted || this.heedApproval()) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const claimer: Claimer = {
        settled: false,
        kids,
        stopTimer: () => clearTimeout(timer),
        settle: (claim) => {
          if (claimer.settled) return false;
          claimer.settled = true;
          clearTimeout(timer);
          this.claimers.delete(claimer);
          signal?.removeEventListener("abort", settle);
          resolve(claim);
          return true;
        },
      };
      const settle = () => claimer.settle(undefined);
      const timer = setTimeout(settle, ms);
      this.claimers.add(claimer);
      signal?.addEventListener("abort", settle);
    });
  }

  /**
   * The longest-waiting executor that accepts a grant signed by `kid`, out of the queue: no
   * approval wakes it and its own timer no longer ends its wait, so it waits for the approval
   * that took it to hand it the claim or let it go. Its request going away still ends it.
   */
  takeClaimer(kid: string): ClaimHandOff | undefined {
    for (const claimer of this.claimers) {
      if (claimer.kids && claimer.kids.length > 0 && !claimer.kids.includes(kid)) continue;
      this.claimers.delete(claimer);
      claimer.stopTimer();
      return { handOff: (claim) => claimer.settle(claim), letGo: () => void claimer.settle(undefined) };
    }
    return undefined;
  }

  /** Executors waiting on this replica for work. */
  get claimersWaiting(): number {
    return this.claimers.size;
  }

  /** Whether an approval that woke no executor is still waiting for one; if so, this caller takes it. */
  private heedApproval(): boolean {
    this.dropStale();
    return this.unheeded.shift() !== undefined;
  }

  private dropStale(): void {
    const since = performance.now() - UNHEEDED_MS;
    while (this.unheeded[0] !== undefined && this.unheeded[0] < since) this.unheeded.shift();
  }

  /** Resolves when the plan may have changed, or after `ms`; aborted waits resolve at once. */
  wait(planId: string | typeof ANY_PLAN, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.emitter.off(planId, done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.emitter.on(planId, done);
      signal?.addEventListener("abort", done);
    });
  }
}

interface Claimer {
  settled: boolean;
  /** The key ids whose grants this executor can verify; any, when absent or empty. */
  kids: readonly string[] | undefined;
  stopTimer(): void;
  /** Ends the wait, with a claim when one was made for it; false when it had ended already. */
  settle(claim: Claim | undefined): boolean;
}

/** What a plan's announcement on PLAN_CHANNEL says: its id and the status it was left in (parseAnnouncement reads it). */
export function announcementPayload(planId: string, status: string): string {
  return `${planId} ${status}`;
}

/**
 * Which plan an announcement is about, and whether an executor may now claim it. A bare plan id
 * (announced by a replica still running an older version) might be an approval, so it wakes
 * executors too.
 */
export function parseAnnouncement(payload: string): { planId: string; claimable: boolean } {
  const space = payload.indexOf(" ");
  if (space < 0) return { planId: payload, claimable: true };
  return { planId: payload.slice(0, space), claimable: payload.slice(space + 1) === "approved" };
}
