import { causeChain } from "../../util/cause-chain.ts";

/** One check's verdict: what was found, and for a failure what to do about it. */
export interface CheckResult {
  ok: boolean;
  line: string;
  /** What to change; every failure has one. */
  fix?: string;
}

export const pass = (line: string): CheckResult => ({ ok: true, line });
export const fail = (line: string, fix: string): CheckResult => ({ ok: false, line, fix });

/** One line each: ✓, or ✗ with the fix after a dash. */
export const printed = (result: CheckResult): string => (result.ok ? `✓ ${result.line}` : `✗ ${result.line} — ${result.fix}`);

/**
 * How long one check that crosses the network may take. A doctor answers in seconds: the
 * drivers' own bounds (PostgreSQL's connect timeout, the executor client's five minutes) are
 * made for processes that wait out an outage.
 */
export const NETWORK_TIMEOUT_MS = 5_000;
const TIMED_OUT = `no answer within ${NETWORK_TIMEOUT_MS / 1000} s (timed out)`;

/**
 * `check` given NETWORK_TIMEOUT_MS, its signal aborted when that runs out; past it, or when it
 * throws, a failure naming `what` and why, with `fix`.
 */
export async function bounded(what: string, fix: string, check: (signal: AbortSignal) => Promise<CheckResult>): Promise<CheckResult> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(fail(`${what}: ${TIMED_OUT}`, fix));
    }, NETWORK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check(controller.signal).catch((err: unknown) => fail(`${what}: ${whyFailed(err)}`, fix)), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** An error as a few words: the first system or driver code in its chain with its message, else every message in the chain. */
export function whyFailed(err: unknown): string {
  const chain = causeChain(err);
  if (chain.some((e) => (e as { name?: unknown }).name === "TimeoutError")) return TIMED_OUT;
  for (const e of chain) {
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0) return whyFailed(inner[0]);
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return firstLine(e).includes(code) ? firstLine(e) : `${code}: ${firstLine(e)}`;
  }
  // fetch says only "fetch failed"; why is in its cause.
  return chain.length > 0 ? chain.map(firstLine).join(": ") : firstLine(err);
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0]!.slice(0, 300);
}
