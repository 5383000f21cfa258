import type { Logger } from "pino";
import { defaultRegistry, type AdapterRegistry } from "../adapters/registry.ts";
import type { VerifyingKeys } from "../grant/keys.ts";
import { executePlan, LeftToLease, type ExecutionPorts } from "./execute-plan.ts";
import { type Claim } from "../contract/executor-api.ts";
import { openTargets } from "./open-targets.ts";
import type { Outcome } from "../plan/outcome.ts";
import { minimalOutcome, reportableOutcome } from "./reportable-outcome.ts";
import { ReportRefused, ServerRefused, type ExecutorServer } from "./server-client.ts";

/** Transient report failures retried before giving the plan back to the lease (about 15 s in all). */
const REPORT_ATTEMPTS = 5;

export interface ExecutorOptions {
  server: ExecutorServer;
  keys: VerifyingKeys;
  environment: string;
  /** Targets with their write credentials (each with its `adapter`): the executor is the only process that has them. */
  targets: Record<string, { adapter: string }>;
  logger: Logger;
  /** The adapters targets are reached through; the built-in ones by default. */
  registry?: AdapterRegistry;
  fetch?: typeof fetch;
  now?: () => Date;
  /** How often to extend the lease while working on a plan; by default a third of the lease the server gave. */
  heartbeatMs?: number;
}

/**
 * `countersign executor`: claims approved plans one at a time, executes each, and reports.
 * Every target is opened once here, through its adapter (a reader with the read credential, a
 * writer with the write one), and closed when the loop ends. Returns a handle whose stop()
 * finishes the plan in hand (never abandons a write half-way; a plan waiting to retry a
 * transient error is left to its lease, unreported) and stops claiming.
 */
export function runExecutor(options: ExecutorOptions): { stop(): Promise<void>; done: Promise<void> } {
  const { server, logger } = options;
  const now = options.now ?? (() => new Date());
  const stopping = new AbortController();
  const targets = openTargets(options.registry ?? defaultRegistry(options.fetch ? { fetch: options.fetch } : {}), options.targets);
  const ports: ExecutionPorts = { keys: options.keys, environment: options.environment, now, target: targets.get, stopping: stopping.signal };

  /**
   * Reports until the server has the outcome: a transient failure (network, 5xx) is retried
   * while the lease is kept; a permanent refusal gets the minimal report once, and then is
   * logged and left, never resent (which would loop until the lease ran out, and again after).
   */
  const deliverReport = async (claimToken: string, outcome: Outcome, log: Logger): Promise<boolean> => {
    const full = reportableOutcome(outcome);
    let delay = 500;
    for (let attempt = 1; ; attempt++) {
      try {
        return await server.report(claimToken, full);
      } catch (err) {
        if (err instanceof ReportRefused) {
          log.warn({ status: err.status }, "the server refused the full report; sending the minimal one");
          try {
            return await server.report(claimToken, minimalOutcome(outcome, err.message));
          } catch (again) {
            if (again instanceof ReportRefused) {
              log.error({ status: again.status, outcome: outcome.status }, `the server refused even the minimal report; not retrying: ${again.message}`);
              return false;
            }
            throw again;
          }
        }
        if (err instanceof ServerRefused || attempt >= REPORT_ATTEMPTS || stopping.signal.aborted) throw err;
        log.warn({ err }, `report failed; retrying in ${delay} ms`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  };

  const handle = async (claim: Claim) => {
    // Made when first used, after the write: pino's child took 0.2–0.6 ms cold, before the revalidating GET.
    let planLog: Logger | undefined;
    const log = () => (planLog ??= logger.child({ planId: claim.plan.id }));
    const heartbeat = setInterval(
      () => {
        server.heartbeat(claim.claimToken).then(
          (held) => held || log().warn("lease lost while executing; the server will refuse this report"),
          (err: unknown) => log().warn({ err }, "heartbeat failed"),
        );
      },
      options.heartbeatMs ?? Math.max(1000, (Date.parse(claim.leaseExpiresAt) - Date.now()) / 3),
    );
    try {
      let outcome: Outcome;
      try {
        outcome = await executePlan(claim, ports);
      } catch (err) {
        if (!(err instanceof LeftToLease)) throw err;
        log().info(err.message);
        return;
      }
      const accepted = await deliverReport(claim.claimToken, outcome, log());
      log().info(
        { status: outcome.status, reconciled: outcome.reconciled, partial: outcome.partial, accepted },
        accepted ? "plan executed" : "report refused: lease lost",
      );
    } finally {
      clearInterval(heartbeat);
    }
  };

  const done = (async () => {
    let backoff = 500;
    while (!stopping.signal.aborted) {
      try {
        const claim = await server.claim(stopping.signal);
        backoff = 500;
        if (claim) await handle(claim);
      } catch (err) {
        if (stopping.signal.aborted) break;
        if (err instanceof ServerRefused) {
          logger.error(err.message);
        } else {
          logger.warn({ err }, `executor loop failed; retrying in ${backoff} ms`);
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
    await targets.close();
  })();

  return {
    done,
    async stop() {
      stopping.abort();
      await done;
    },
  };
}
