import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoDatabaseNames } from "../../src/demo/postgres-row-demo.ts";
import { startCli } from "../support/cli.ts";
import { freePort } from "../support/free-port.ts";
import { testGrantKeys } from "../support/harness.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL;
const READY = /Ctrl-C stops everything/;
const START_MS = 240_000;
const STOP_MS = 60_000;

/** The line `start` prints that proposes a change to the http.json demo as the demo agent. */
const PROPOSE = /^ {2}(curl -s http:\/\/\S+\/v1\/plans -H 'Authorization: Bearer csk_\S+' .*"target":"contacts".*)$/m;

/** Runs a printed curl line as a person would paste it into a shell. */
async function pasted(line: string): Promise<{ id?: string; status?: string; error?: unknown }> {
  const { stdout } = await promisify(execFile)("sh", ["-c", line]);
  return JSON.parse(stdout) as { id?: string; status?: string };
}

/**
 * `npm start` on the embedded database and then, in the same clone, `DATABASE_URL=… npm start`:
 * the demo agent's key is kept per database, so both print a propose line that works.
 */
describe.skipIf(!testDatabaseUrl)("countersign start: PGlite first, then PostgreSQL in the same directory", () => {
  const name = `cs_demo_order_${randomBytes(4).toString("hex")}`;
  const databaseUrl = (() => {
    const url = new URL(testDatabaseUrl ?? "postgres://unset");
    url.pathname = `/${name}`;
    return url.toString();
  })();
  let admin: postgres.Sql;
  let dir: string;
  let grantEnv: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-demo-order-"));
    admin = postgres(testDatabaseUrl!, { onnotice: () => {}, max: 1 });
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const keys = await testGrantKeys();
    grantEnv = { COUNTERSIGN_GRANT_PRIVATE_KEY: keys.privatePem, COUNTERSIGN_GRANT_PUBLIC_KEY: keys.publicPem };
  });
  afterAll(async () => {
    const demo = demoDatabaseNames(databaseUrl);
    await admin.unsafe(`DROP DATABASE IF EXISTS ${demo.database} WITH (FORCE)`);
    await admin.unsafe(`DROP ROLE IF EXISTS ${demo.readRole}`);
    await admin.unsafe(`DROP ROLE IF EXISTS ${demo.writeRole}`);
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end({ timeout: 5 });
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "both print a propose curl line, and each works",
    async () => {
      for (const env of [{}, { ...grantEnv, DATABASE_URL: databaseUrl }]) {
        const app = await startCli(["start"], { cwd: dir, env: { ...env, PORT: String(await freePort()) }, ready: READY, timeoutMs: START_MS });
        try {
          const output = app.output();
          expect(output).not.toContain("was lost");
          const line = PROPOSE.exec(output)?.[1];
          expect(line, output).toBeDefined();
          const plan = await pasted(line!);
          expect(plan, JSON.stringify(plan)).toMatchObject({ id: expect.any(String), status: "pending" });
        } finally {
          const code = await Promise.race([app.stop(), new Promise((resolve) => setTimeout(() => resolve("still running"), STOP_MS))]);
          if (code === "still running") app.child.kill("SIGKILL");
          expect(code, app.output()).toBe(0);
        }
      }
    },
    2 * (START_MS + STOP_MS) + 30_000,
  );
});
