/**
 * How often a PostgreSQL restart kills `countersign serve`: a private cluster (never the shared
 * one), a real `serve` child under a submit/read load from a few agents, and `pg_ctl restart -m
 * fast` RESTARTS times. A server that exits is counted and started again. Prints the count of
 * exits per restart. Run: npx tsx bench/db-restart.ts [restarts]
 * (docs/notes/postgres-driver.md says how the driver behaves on a restart).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { addAgent } from "../src/service/agents/add-agent.ts";
import { openDatabase } from "../src/store/db.ts";
import { startCli } from "../test/support/cli.ts";
import { crmTargetYaml } from "../test/support/crm-target-yaml.ts";
import { JsonResourceServer } from "../src/demo/json-resource-server.ts";
import { READ_TOKEN, WRITE_TOKEN, testGrantKeys } from "../test/support/harness.ts";
import { startPrivatePostgres } from "../test/support/private-postgres.ts";

const RESTARTS = Number(process.argv[2] ?? 6);
const pg = await startPrivatePostgres();
const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-bench-restart-"));
const target = new JsonResourceServer({ seed: { "/contacts/1": { id: 1 } }, readTokens: [READ_TOKEN], writeToken: WRITE_TOKEN });
await target.start();
writeFileSync(path.join(dir, "countersign.yml"), ["defaults: { approvers: [U0ALICE] }", ...crmTargetYaml(target.url, { allowMerges: true })].join("\n"));
const env = {
  COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
  CRM_READ: READ_TOKEN,
  DATABASE_URL: pg.url,
  PORT: "0",
  COUNTERSIGN_GRANT_PRIVATE_KEY: (await testGrantKeys()).privatePem,
  LOG_LEVEL: "info",
};

let exits = 0;
let running = true;
let server = await startServer();
async function startServer() {
  const s = await startCli(["serve"], { cwd: dir, env, ready: /"url":"http:\/\/[^"]+".*countersign serving/, timeoutMs: 60_000 });
  const url = /"url":"(http:\/\/[^"]+)"/.exec(s.output())![1]!;
  s.child.on("exit", () => {
    if (!running) return;
    exits++;
    const crash = /TypeError[^\n]*/.exec(s.output());
    console.log(`serve exited: ${crash?.[0] ?? "(no TypeError in its output)"}`);
  });
  return { ...s, url, alive: () => s.child.exitCode === null && s.child.signalCode === null };
}
const direct = await openDatabase({ kind: "postgres", url: pg.url });
const key = (await addAgent({ database: direct, clock: () => new Date() }, { name: "bench" })).key;
await direct.close();

let n = 0;
const agent = async () => {
  while (running) {
    const body = JSON.stringify({
      title: `bench ${n}`,
      idempotencyKey: `bench-${n++}`,
      actions: [{ kind: "http.json", target: "crm", path: "/contacts/1", op: "merge", body: { n } }],
    });
    await fetch(`${server.url}/v1/plans`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body })
      .then((r) => r.arrayBuffer())
      .catch(() => {});
  }
};
const agents = Array.from({ length: 4 }, agent);
for (let r = 1; r <= RESTARTS; r++) {
  await new Promise((res) => setTimeout(res, 1500));
  const before = exits;
  await pg.restart();
  await new Promise((res) => setTimeout(res, 2000));
  console.log(`restart ${r}: ${exits > before ? "serve EXITED" : "serve survived"}`);
  if (!server.alive()) server = await startServer();
}
running = false;
await Promise.all(agents);
console.log(`serve exits: ${exits} of ${RESTARTS} restarts`);
await server.stop();
await target.stop();
await pg.destroy();
rmSync(dir, { recursive: true, force: true });
