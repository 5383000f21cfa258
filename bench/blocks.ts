import os from "node:os";

/**
 * How long and how often. `--quick` is a smoke run that keeps `npm run bench -- --quick` under two
 * minutes on a quiet machine: 3 short block pairs (medians of 3, so its ratios are rough) and a
 * 100 k history instead of 1 M; the volume scenario (minutes by definition) runs only when named.
 */
export interface Pace {
  quick: boolean;
  /** Block pairs per figure (product, floor); at least 5, except 3 with --quick. */
  blocks: number;
  /** Seconds of each throughput block. */
  seconds: number;
  /** Sequential round trips per latency block. */
  rounds: number;
  /** Runs of the start-up figures (help, start). */
  runs: { help: number; start: number };
  /** Stored plans for the "at scale" figure (the small side is always 10 k). */
  largePlans: number;
}

export function pace(quick: boolean): Pace {
  const blocks = Number(process.env.BENCH_BLOCKS ?? 7);
  if (!Number.isInteger(blocks) || blocks < 5)
    throw new Error(`BENCH_BLOCKS must be a whole number of at least 5 (each figure is the median of ≥ 5 block pairs), got '${process.env.BENCH_BLOCKS}'`);
  return quick
    ? { quick, blocks: 3, seconds: 1.5, rounds: 1, runs: { help: 3, start: 1 }, largePlans: 100_000 }
    : {
        quick,
        blocks,
        seconds: 8,
        rounds: 6,
        runs: { help: Number(process.env.BENCH_RUNS ?? 7), start: Number(process.env.BENCH_RUNS_START ?? 3) },
        largePlans: 1_000_000,
      };
}

/**
 * Runs `pace.blocks` pairs, product then floor, alternating (the first pair after one unrecorded
 * warm-up of each, which pays JIT, connection pools and caches). Returns one value of each per pair
 * and the load average at each pair.
 */
export async function alternate(
  blocks: number,
  product: () => Promise<number>,
  floor: () => Promise<number>,
): Promise<{ product: number[]; floor: number[]; load: number[] }> {
  await product();
  await floor();
  const result = { product: [] as number[], floor: [] as number[], load: [] as number[] };
  for (let i = 0; i < blocks; i++) {
    // Which goes first alternates too, so neither always follows the other's leftovers.
    if (i % 2 === 0) {
      result.product.push(await product());
      result.floor.push(await floor());
    } else {
      result.floor.push(await floor());
      result.product.push(await product());
    }
    result.load.push(os.loadavg()[0]!);
  }
  return result;
}

/** `inFlight` workers call `once` until `seconds` have passed; resolves with completions per second. */
export async function throughput(inFlight: number, seconds: number, once: (worker: number) => Promise<void>): Promise<number> {
  const started = performance.now();
  const end = started + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      while (performance.now() < end) {
        await once(worker);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}
