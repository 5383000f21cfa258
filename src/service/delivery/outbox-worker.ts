import { randomUUID } from "node:crypto";
import type { LoopReport } from "../../util/every.ts";
import type { ServiceContext } from "../context.ts";
import { DEFAULT_DELIVERY, DEFAULT_LANES } from "./sink-contract.ts";
import { drainLane, type DeliverDueInput } from "./outbox-drain.ts";
import { leaseLanes } from "./outbox-lease.ts";

/**
 * The server's outbox worker: every `intervalMs` it leases lanes with rows due, up to `lanes`
 * drained at once, and drains each on its own. Unlike one deliverDue pass it never waits for
 * its slowest lane before taking others: a channel pacing its posts, a Retry-After or a webhook
 * that times out keeps only its own lane busy, and a lane that frees up is refilled at the next
 * tick. stop() stops leasing and waits for the deliveries in hand; their lanes take no more rows.
 */
export function startOutboxWorker(
  ctx: Pick<ServiceContext, "database" | "clock">,
  input: DeliverDueInput & { intervalMs: number; report: LoopReport },
): { stop(): Promise<void> } {
  const { handlers, policy = DEFAULT_DELIVERY, lanes = DEFAULT_LANES, intervalMs, report } = input;
  const kinds = Object.keys(handlers);
  const draining = new Set<Promise<unknown>>();
  let stopped = false;
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();

  /** True when it asked the database: only that may end a reported outage. */
  const tick = async (): Promise<boolean> => {
    const room = lanes - draining.size;
    if (room <= 0 || kinds.length === 0) return false;
    // A token per lease: a lane given back and taken again is a new lease.
    const token = randomUUID();
    const leased = await leaseLanes(ctx.database, { kinds, at: ctx.clock(), leaseMs: policy.leaseMs, max: room, token });
    for (const lane of leased) {
      const startedAt = Date.now();
      const drain: Promise<unknown> = drainLane(ctx, { ...input, lane, token, signal: stopping.signal })
        .catch((err: unknown) => {
          if (!stopped) report.failed(err, startedAt);
        })
        .finally(() => draining.delete(drain));
      draining.add(drain);
    }
    return true;
  };
  const loop = () => {
    // A tick that found every lane slot busy read nothing: calling that a success would log "resumed"
    // mid-outage while the busy drains still fail, and then "paused" again (the db-restart scenario
    // counts one line per outage).
    ticking = tick()
      .then(
        (asked) => {
          if (asked) report.succeeded?.();
        },
        (err: unknown) => {
          if (!stopped) report.failed(err);
        },
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, intervalMs);
      });
  };
  timer = setTimeout(loop, intervalMs);
  return {
    async stop() {
      stopped = true;
      stopping.abort();
      clearTimeout(timer);
      await ticking;
      await Promise.all(draining);
    },
  };
}
