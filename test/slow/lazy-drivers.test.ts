import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "../support/cli.ts";
import { crmTargetYaml } from "../support/crm-target-yaml.ts";
import { postgresKind } from "../support/databases.ts";
import { READ_TOKEN, testGrantKeys } from "../support/harness.ts";

/**
 * PGlite (~43 MB and a WASM instance) is imported only when no DATABASE_URL is set.
 * The real built CLI runs with a module hook that records every module it resolves; the embedded
 * run is the control that shows the record would catch PGlite.
 */
const RECORDER = fileURLToPath(new URL("../support/import-recorder.mjs", import.meta.url));
const PGLITE = /\/node_modules\/@electric-sql\/pglite\//;
/** The build's chunk for the template unpacker (with tar), named by esbuild after its module. */
const TEMPLATE_CHUNK = /\/dist\/pglite-template-[A-Z0-9]+\.js$/;
/** drizzle's PGlite driver, installed beside dist/. */
const DRIZZLE_PGLITE = /\/node_modules\/drizzle-orm\/pglite\//;

describe("database drivers load lazily", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-lazy-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const recording = (name: string) => {
    const log = path.join(dir, `${name}.imports`);
    return {
      log,
      env: { NODE_OPTIONS: `--import ${RECORDER}`, COUNTERSIGN_IMPORT_LOG: log },
      imports: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : []),
    };
  };

  it("an embedded command imports PGlite (the recorder sees it)", async () => {
    const cwd = mkdtempSync(path.join(dir, "embedded-"));
    const rec = recording("embedded");
    const listed = await runCli(["agents", "list"], { cwd, env: rec.env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(rec.imports().filter((url) => PGLITE.test(url))).not.toEqual([]);
    expect(rec.imports().filter((url) => TEMPLATE_CHUNK.test(url))).toHaveLength(1);
    expect(rec.imports().some((url) => DRIZZLE_PGLITE.test(url))).toBe(true);
    // The built CLI itself was recorded too, so an empty record cannot pass the next test.
    expect(rec.imports().some((url) => url.endsWith("/dist/cli.js"))).toBe(true);
  }, 120_000);

  describe.skipIf(!postgresKind)("on PostgreSQL", () => {
    const url = new URL(process.env.TEST_DATABASE_URL ?? "postgres://unset");
    const name = `cs_test_${randomBytes(6).toString("hex")}`;
    let admin: postgres.Sql;
    beforeAll(async () => {
      admin = postgres(url.toString(), { onnotice: () => {}, max: 1 });
      await admin.unsafe(`CREATE DATABASE ${name}`);
    });
    afterAll(async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
    });

    it("serve on PostgreSQL migrates, serves and never imports PGlite or the embedded database's chunks", async () => {
      const cwd = mkdtempSync(path.join(dir, "serve-"));
      writeFileSync(
        path.join(cwd, "countersign.yml"),
        ["defaults: { approvers: [U0ALICE] }", ...crmTargetYaml("http://127.0.0.1:9", { allowMerges: true })].join("\n"),
      );
      const databaseUrl = new URL(url);
      databaseUrl.pathname = `/${name}`;
      const rec = recording("serve-postgres");
      const serve = await startCli(["serve"], {
        cwd,
        env: {
          ...rec.env,
          DATABASE_URL: databaseUrl.toString(),
          COUNTERSIGN_CONFIG: path.join(cwd, "countersign.yml"),
          COUNTERSIGN_GRANT_PRIVATE_KEY: (await testGrantKeys()).privatePem,
          COUNTERSIGN_EXECUTOR_TOKEN: "an-executor-token-of-some-length",
          CRM_READ: READ_TOKEN,
          PORT: "0",
          LOG_LEVEL: "info",
        },
        ready: /"url":"(http:\/\/[^"]+)".*countersign serving/,
        timeoutMs: 90_000,
      });
      try {
        const serverUrl = /"url":"(http:\/\/[^"]+)"/.exec(serve.output())![1]!;
        // It did the work that might pull a driver in: migrated, and looked an agent key up.
        expect((await fetch(`${serverUrl}/v1/plans`, { headers: { authorization: "Bearer csk_not_a_key" } })).status).toBe(401);
        const direct = postgres(databaseUrl.toString(), { onnotice: () => {}, max: 1 });
        try {
          const [{ n }] = await direct<[{ n: number }]>`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
          expect(n).toBeGreaterThan(0);
        } finally {
          await direct.end({ timeout: 5 });
        }
      } finally {
        expect(await serve.stop()).toBe(0);
      }
      const imports = rec.imports();
      expect(imports.some((u) => u.endsWith("/dist/cli.js"))).toBe(true);
      expect(imports.filter((u) => PGLITE.test(u) || TEMPLATE_CHUNK.test(u) || DRIZZLE_PGLITE.test(u))).toEqual([]);
    }, 120_000);
  });
});
