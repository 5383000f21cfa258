import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { crmTargetYaml } from "../../test/support/crm-target-yaml.ts";
import type { FigureSource } from "../figure.ts";
import { cleanEnv, countersignCommand, idleNodeRssMb, settledTreeRssMb, startUntilReady } from "../processes.ts";
import { freePort } from "./start.ts";

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;

/** `countersign serve` on PostgreSQL with one target, idle: what a production replica costs at rest. */
export const servePostgres: FigureSource = {
  title: "countersign serve on PostgreSQL",
  async measure() {
    if (!DATABASE_URL)
      return [{ name: "serve_idle_rss_mb_postgres", skipped: "set BENCH_DATABASE_URL or TEST_DATABASE_URL to a PostgreSQL it may create a database on" }];
    const cli = countersignCommand();
    const admin = postgres(DATABASE_URL, { onnotice: () => {}, max: 1 });
    const name = `cs_bench_${randomBytes(6).toString("hex")}`;
    const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-bench-serve-"));
    await admin.unsafe(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(DATABASE_URL);
      url.pathname = `/${name}`;
      writeFileSync(
        path.join(dir, "countersign.yml"),
        ["defaults: { approvers: [U0ALICE] }", ...crmTargetYaml("http://127.0.0.1:9", { allowMerges: true })].join("\n"),
      );
      const { privateKey } = generateKeyPairSync("ed25519");
      const serve = await startUntilReady([...cli.args, "serve"], {
        cwd: dir,
        env: cleanEnv({
          LOG_LEVEL: "info",
          DATABASE_URL: url.toString(),
          COUNTERSIGN_CONFIG: path.join(dir, "countersign.yml"),
          COUNTERSIGN_GRANT_PRIVATE_KEY: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
          CRM_READ: "bench-read-token",
          // A production replica expects an executor, and holds the token it authenticates with.
          COUNTERSIGN_EXECUTOR_TOKEN: randomBytes(24).toString("base64url"),
          PORT: String(await freePort()),
        }),
        ready: /countersign serving/,
      });
      try {
        const mb = await settledTreeRssMb(serve.child.pid!);
        return [
          {
            name: "serve_idle_rss_mb_postgres",
            value: mb,
            unit: "MB",
            goal: { below: 120 },
            baseline: { label: "idle node", value: await idleNodeRssMb() },
            ...(cli.note ? { note: cli.note } : {}),
          },
        ];
      } finally {
        await serve.stop();
      }
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
