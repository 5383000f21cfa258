/**
 * What signed audit seals cost. Makes a database on TEST_DATABASE_URL's server (or
 * BENCH_DATABASE_URL's), appends EVENTS system-chain audit events (in transactions of 500, so
 * the sealer cuts them into several seals), seals them, then prints in ms:
 *   - signSeals (read, sign, store, queue one publication row), median of 20;
 *   - plain verifyAudit (the baseline) and verifySeals against one published seal covering
 *     everything, alternating, 3 runs each, and their ratio.
 * Seals stop below the server's xmin: run it where no long transaction is open.
 * Run: node --import tsx bench/audit-seals.ts [EVENTS]   (EVENTS default 20000)
 */
import { generateKeyPairSync } from "node:crypto";
import { sql } from "drizzle-orm";
import { appendAudit } from "../src/service/records/audit.ts";
import { sealAudit } from "../src/service/audit/seal-audit.ts";
import { loadSealKey } from "../src/service/audit/seal-signature.ts";
import { signSeals } from "../src/service/audit/sign-seals.ts";
import { verifyAudit } from "../src/service/audit/verify-audit.ts";
import { verifySeals } from "../src/service/audit/verify-seals.ts";
import { openThrowawayPostgres } from "../test/support/throwaway-postgres.ts";

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (!adminUrl) throw new Error("set TEST_DATABASE_URL or BENCH_DATABASE_URL to a server this bench may create a database on");
const events = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 20_000);
const database = await openThrowawayPostgres(adminUrl, { prefix: "countersign_bench_seals" });
const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  await database.migrate();
  const at = new Date();
  for (let i = 0; i < events; i += 500) {
    await database.db.transaction(async (tx) => {
      for (let j = i; j < Math.min(events, i + 500); j++)
        await appendAudit(tx, { planId: null, type: "bench.event", actor: { type: "system", process: "bench" }, data: { n: j }, at });
    });
  }
  const ctx = { database, clock: () => new Date() };
  while ((await sealAudit(ctx)).length > 0);
  const pair = generateKeyPairSync("ed25519");
  const key = await loadSealKey(pair.privateKey.export({ format: "pem", type: "pkcs8" }).toString());
  const signing = { key, policy: { everyEvents: 1, everySeconds: 1, file: "/dev/null" } };
  const signMs: number[] = [];
  let published: Awaited<ReturnType<typeof signSeals>>;
  for (let i = 0; i < 20; i++) {
    // A signature per new seal: append one event, seal it, sign it.
    await database.db.transaction((tx) =>
      appendAudit(tx, { planId: null, type: "bench.event", actor: { type: "system", process: "bench" }, data: { n: -i }, at }),
    );
    while ((await sealAudit(ctx)).length > 0);
    const t = process.hrtime.bigint();
    const signed = await signSeals(ctx, signing);
    if (signed) {
      signMs.push(ms(t));
      published = signed;
    }
  }
  const entries = [{ seal: published!, line: 1 }];
  const plain: number[] = [];
  const sealed: number[] = [];
  for (let i = 0; i < 3; i++) {
    let t = process.hrtime.bigint();
    if (!(await verifyAudit(ctx)).ok) throw new Error("the bench log does not verify");
    plain.push(ms(t));
    t = process.hrtime.bigint();
    if (!(await verifySeals(ctx, entries, [key.publicKey])).ok) throw new Error("the published seal does not verify");
    sealed.push(ms(t));
  }
  const [seals] = await database.rows<{ n: string }>(sql`SELECT count(*) AS n FROM audit_seals`);
  console.log(`${events + 20} events, ${seals!.n} seals`);
  console.log(`signSeals (${signMs.length} signed): median ${median(signMs).toFixed(1)} ms (max ${Math.max(...signMs).toFixed(1)})`);
  console.log(`verifyAudit (baseline): ${plain.map((x) => x.toFixed(0)).join(", ")} ms`);
  console.log(`verifySeals: ${sealed.map((x) => x.toFixed(0)).join(", ")} ms; ratio to baseline ${(median(sealed) / median(plain)).toFixed(2)}x`);
} finally {
  await database.close();
}
