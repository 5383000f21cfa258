import type { Logger } from "pino";
import { defaultRegistry, type AdapterRegistry } from "../adapters/registry.ts";
import type { GrantKey } from "../contract/executor-api.ts";
import { unverifiedKidOf } from "../grant/grant.ts";
import type { VerifyingKeys } from "../grant/keys.ts";
import { StartupError } from "../util/startup-errors.ts";
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
 *
 * Before its first claim, and again after any failed call (the server may have come back with
 * another key), it asks which keys the server signs grants with; if COUNTERSIGN_GRANT_PUBLIC_KEY
 * holds none of them it stops, and `refused` says why in one line. Each claim names the key ids
 * it holds, so the server never hands it a plan whose grant it could not verify.
 */
export function runExecutor(options: ExecutorOptions): { stop(): Promise<void>; done: Promise<void>; refused: Promise<string> } {
  const { server, logger } = options;
  const kids = [...options.keys.byKid.keys()];
  let refuse!: (why: string) => void;
  const refused = new Promise<string>((resolve) => (refuse = resolve));
  let keysChecked = false;
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

  const checkKeys = async () => {
    const theirs = await server.keys(stopping.signal);
    if (!theirs) {
      logger.warn("the server does not say which keys it signs grants with (an older version); COUNTERSIGN_GRANT_PUBLIC_KEY is checked grant by grant");
      return;
    }
    const shared = theirs.keys.filter((k) => options.keys.byKid.has(k.kid));
    if (shared.length === 0) throw new StartupError("COUNTERSIGN_GRANT_PUBLIC_KEY", keyMismatch(kids, theirs.keys));
    logger.info({ kids: shared.map((k) => k.kid) }, "the server signs grants with a key COUNTERSIGN_GRANT_PUBLIC_KEY holds");
  };

  const handle = async (claim: Claim) => {
    // Made when first used, after the write: pino's child took 0.2–0.6 ms cold, before the revalidating GET.
    let planLog: Logger | undefined;
    const log = () => (planLog ??= logger.child({ planId: claim.plan.id }));
    // Only a server that ignores the claim's key ids hands out such a plan: a key mismatch is not
    // the plan's failure, so it is left to its lease (and expires) rather than reported failed.
    const kid = unverifiedKidOf(claim.grant);
    if (kid !== undefined && !options.keys.byKid.has(kid)) {
      keysChecked = false;
      log().error(
        { kid },
        `the plan's grant is signed with key \`${kid}\`, which COUNTERSIGN_GRANT_PUBLIC_KEY does not hold (${kids.map((k) => `\`${k}\``).join(", ")}); it is left to its lease`,
      );
      return;
    }
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
    let unreachable = false;
    while (!stopping.signal.aborted) {
      try {
        if (!keysChecked) {
          await checkKeys();
          keysChecked = true;
        }
        const claim = await server.claim(kids, stopping.signal);
        backoff = 500;
        if (unreachable) logger.info("the server answers again");
        unreachable = false;
        if (claim) await handle(claim);
      } catch (err) {
        if (stopping.signal.aborted) break;
        if (err instanceof StartupError) {
          refuse(err.message);
          break;
        }
        keysChecked = false;
        if (err instanceof ServerRefused) {
          logger.error(err.message);
        } else {
          const failure = connectionFailure(err);
          // One line per outage: a server that is down or restarting is waited for, not a fault with a stack.
          if (failure === undefined) logger.warn({ err }, `executor loop failed; retrying in ${backoff} ms`);
          else if (!unreachable)
            logger.error(`COUNTERSIGN_URL: the server does not answer (${failure}); start it or fix COUNTERSIGN_URL. Retrying quietly until it answers`);
          unreachable ||= failure !== undefined;
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
    await targets.close();
  })();

  return {
    done,
    refused,
    async stop() {
      stopping.abort();
      await done;
    },
  };
}

/** One line: which keys this executor holds, which the server signs with, and what to set. */
function keyMismatch(kids: readonly string[], theirs: readonly GrantKey[]): string {
  const ours = kids.map((k) => `\`${k}\``).join(", ");
  const server = theirs.map((k) => `\`${k.kid}\` (${k.fingerprint})`).join(", ");
  return (
    `holds key ${ours}, but the server signs grants with key ${server}, so this executor could verify none of its grants; ` +
    "set it to the server's public key, the public half of its COUNTERSIGN_GRANT_PRIVATE_KEY ('countersign keys generate' prints both)"
  );
}

/** Why a call never reached the server (fetch's and nodeHttpClient's TypeError with the socket's error as cause), or undefined. */
function connectionFailure(err: unknown): string | undefined {
  if (!(err instanceof TypeError)) return undefined;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? `${err.message}: ${code}` : undefined;
}
