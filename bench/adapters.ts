/**
 * What one action costs through the adapter interface, preview → apply → verify,
 * in alternating rounds so load hits all three alike:
 *   - http.json called directly (the functions submit and the executor call today): the baseline,
 *   - http.json through its adapter (the wrapper should add nothing measurable),
 *   - postgres.row (SELECT-only read role, write role; a version column and a logging trigger).
 *   node --import tsx bench/adapters.ts POSTGRES_ADMIN_URL [ROUNDS]      (default 200)
 */
import os from "node:os";
import { httpJsonAdapter } from "../src/adapters/http-json-adapter.ts";
import { previewHttpJson, readResource } from "../src/adapters/http-json.ts";
import { applyHttpJson } from "../src/adapters/http-json-apply.ts";
import { postgresRowAdapter } from "../src/adapters/postgres-row/postgres-row-adapter.ts";
import { PostgresRowTarget } from "../src/plan/postgres-row-schema.ts";
import { createReadOnlyHttp } from "../src/adapters/read-only-http.ts";
import { TargetConfig } from "../src/config/schema.ts";
import { JsonResourceServer } from "../src/demo/json-resource-server.ts";
import { openRowDatabase } from "../test/support/adapters-postgres.ts";
import { median, percentile } from "./figure.ts";

const adminUrl = process.argv[2];
const ROUNDS = Number(process.argv[3] ?? 200);
if (!adminUrl?.startsWith("postgres")) throw new Error("give the PostgreSQL admin URL, e.g. postgres://postgres@127.0.0.1:5432/postgres");
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`ROUNDS must be a positive whole number, got '${process.argv[3]}'`);

const server = new JsonResourceServer({ readTokens: ["read"], writeToken: "write" });
await server.start();
const httpTarget = TargetConfig.parse({
  adapter: "http.json",
  baseUrl: server.url,
  read: { headers: { authorization: "Bearer read" } },
  write: { headers: { authorization: "Bearer write" } },
});
const db = await openRowDatabase(adminUrl);
const rowTarget = PostgresRowTarget.parse({
  adapter: "postgres.row",
  read: { url: db.readUrl },
  write: { url: db.writeUrl },
  tables: { contacts: { key: ["id"], version: "updated_at" } },
  allow: { ops: ["update"], tables: ["contacts"] },
});
await db.admin`INSERT INTO contacts (id, name) SELECT g, 'n' || g FROM generate_series(1, ${ROUNDS}) g`;
for (let i = 1; i <= ROUNDS; i++) server.set(`/contacts/${i}`, { name: `n${i}` });

const http = createReadOnlyHttp();
const httpAdapter = httpJsonAdapter();
const httpReader = httpAdapter.openReader("crm", httpTarget);
const httpWriter = httpAdapter.openWriter("crm", httpTarget);
const rowAdapter = postgresRowAdapter();
const rowReader = rowAdapter.openReader("crmdb", rowTarget);
const rowWriter = rowAdapter.openWriter("crmdb", rowTarget);

const times: Record<"direct" | "wrapped" | "row", number[]> = { direct: [], wrapped: [], row: [] };
async function timed(into: number[], run: () => Promise<void>): Promise<void> {
  const start = performance.now();
  await run();
  into.push(performance.now() - start);
}

for (let i = 1; i <= ROUNDS; i++) {
  const path = `/contacts/${i}`;
  const rounds: [keyof typeof times, () => Promise<void>][] = [
    [
      "direct",
      async () => {
        const action = { kind: "http.json" as const, target: "crm", path, op: "merge" as const, body: { name: `direct ${i}` } };
        const { planned } = await previewHttpJson(http, httpTarget, action);
        const result = await applyHttpJson(fetch, "crm", httpTarget, planned, `d:${i}`);
        if (result.status !== "applied") throw new Error(`direct: ${JSON.stringify(result)}`);
        await readResource(http, "crm", httpTarget, path);
      },
    ],
    [
      "wrapped",
      async () => {
        const { planned, preview } = await httpReader.preview({ kind: "http.json", target: "crm", path, op: "merge", body: { name: `wrapped ${i}` } });
        const result = await httpWriter.apply(planned, `w:${i}`);
        if (result.status !== "applied") throw new Error(`wrapped: ${JSON.stringify(result)}`);
        if (!(await httpReader.verify(planned, preview)).verified) throw new Error("wrapped: not verified");
      },
    ],
    [
      "row",
      async () => {
        const { planned, preview } = await rowReader.preview({
          kind: "postgres.row",
          target: "crmdb",
          table: "contacts",
          key: { id: i },
          op: "update",
          values: { name: `row ${i}` },
        });
        const result = await rowWriter.apply(planned, `r:${i}`);
        if (result.status !== "applied") throw new Error(`row: ${JSON.stringify(result)}`);
        if (!(await rowReader.verify(planned, preview)).verified) throw new Error("row: not verified");
      },
    ],
  ];
  // Rotate the order each round so none always runs first.
  for (let k = 0; k < rounds.length; k++) {
    const [name, run] = rounds[(i + k) % rounds.length]!;
    await timed(times[name], run);
  }
}

const line = (label: keyof typeof times) => `p50 ${median(times[label]).toFixed(2)} ms, p99 ${percentile(times[label], 99).toFixed(2)} ms`;
console.log(`preview + apply + verify, ${ROUNDS} rounds, load ${os.loadavg()[0]!.toFixed(1)}`);
console.log(`  http.json direct (baseline): ${line("direct")}`);
console.log(`  http.json via adapter:       ${line("wrapped")}, ratio ${(median(times.wrapped) / median(times.direct)).toFixed(2)}× baseline`);
console.log(`  postgres.row:                ${line("row")}, ratio ${(median(times.row) / median(times.direct)).toFixed(2)}× baseline`);

await Promise.all([httpReader.close(), httpWriter.close(), rowReader.close(), rowWriter.close()]);
await server.stop();
await db.close();
