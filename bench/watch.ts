/**
 * What the target watcher costs as open plans grow: PLANS pending plans over PATHS
 * resources of one watched target, on PostgreSQL. Prints the time of a pass that lists new plans
 * (100 a pass), of a pass with nothing due (the anti-join over every open plan, the steady
 * state between reads), and of the passes that read every resource once an interval, with the
 * reads the target saw per resource (the goal: exactly one, however many plans are on it).
 *   node --import tsx bench/watch.ts [PLANS] [PATHS]     (defaults 2000, 200; TEST_DATABASE_URL names the server)
 * A database of its own is created next to the one the URL names and dropped at the end.
 */
import { submitPlan } from "../src/service/intake/submit-plan.ts";
import { watchTargets } from "../src/service/watch/watch-targets.ts";
import { mergeRequest, openHarness, targetConfig } from "../test/support/harness.ts";
import { openThrowawayPostgres } from "../test/support/throwaway-postgres.ts";

const PLANS = Number(process.argv[2] ?? 2000);
const PATHS = Number(process.argv[3] ?? 200);
for (const [what, n] of [
  ["PLANS", PLANS],
  ["PATHS", PATHS],
] as const) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`${what} must be a positive whole number, got '${n}'`);
}
const INTERVAL = 30;
const serverUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = await openThrowawayPostgres(serverUrl, { prefix: "cs_bench_watch" });
try {
  await database.migrate();
  const h = await openHarness(database, { targets: (u) => ({ crm: targetConfig(u, { watch: { intervalSeconds: INTERVAL } }) }) });
  for (let p = 0; p < PATHS; p++) h.target.set(`/contacts/w${p}`, { id: p, email: `c${p}@old.example` });
  const submitted = Date.now();
  for (let i = 0; i < PLANS; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, PLANS - i) }, (_, j) =>
        submitPlan(h.ctx, {
          agent: h.agent,
          request: mergeRequest({
            title: `plan ${i + j}`,
            actions: [{ kind: "http.json", target: "crm", path: `/contacts/w${(i + j) % PATHS}`, op: "merge", body: { email: `n${i + j}@example.com` } }],
          }),
        }),
      ),
    );
  }
  console.log(`${PLANS} plans over ${PATHS} resources submitted in ${((Date.now() - submitted) / 1000).toFixed(1)} s`);
  const ms = async (run: () => Promise<unknown>) => {
    const start = performance.now();
    await run();
    return performance.now() - start;
  };
  const watch = () => watchTargets(h.ctx, { replica: "bench" });
  const listing: number[] = [];
  for (let i = 0; i < Math.ceil(PLANS / 100); i++) listing.push(await ms(watch));
  // A minute on, the plans are no longer recent; the resources' first reads (due within the interval) are done first.
  h.clock.advance(61);
  while ((await watch()).read > 0);
  const idle: number[] = [];
  for (let i = 0; i < 20; i++) idle.push(await ms(watch));
  const readsBefore = new Map<string, number>();
  const readsOf = (path: string) => h.target.requests.filter((r) => r.method === "GET" && r.path === path).length;
  for (let p = 0; p < PATHS; p++) readsBefore.set(`/contacts/w${p}`, readsOf(`/contacts/w${p}`));
  h.clock.advance(INTERVAL);
  const reading: number[] = [];
  let read = 0;
  for (let i = 0; i < Math.ceil(PATHS / 50) + 2; i++) {
    const start = performance.now();
    read += (await watch()).read;
    reading.push(performance.now() - start);
  }
  const perPath = [...readsBefore].map(([path, before]) => readsOf(path) - before);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
  const max = (xs: number[]) => Math.max(...xs).toFixed(1);
  console.log(`listing passes (100 new plans each): median ${median(listing)} ms, max ${max(listing)} ms over ${listing.length}`);
  console.log(
    `passes with nothing due (${PLANS} open plans listed, none created in the last minute): median ${median(idle)} ms, max ${max(idle)} ms over ${idle.length}`,
  );
  console.log(
    `one interval later: ${read} reads in ${reading.length} passes (median ${median(reading)} ms, max ${max(reading)} ms); reads per resource min ${Math.min(...perPath)} max ${Math.max(...perPath)}`,
  );
  await h.close();
} finally {
  await database.close();
}
