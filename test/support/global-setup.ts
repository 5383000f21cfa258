import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/store/db.ts";
import { buildCli, cliIsStale } from "../../scripts/build.mjs";

/**
 * Builds dist/cli.js when a source is newer, so the tests that spawn `countersign` run what
 * users run. Migrates one PGlite database and dumps it, so each test file starts its own copy
 * in under a second instead of booting and migrating a fresh one (several seconds each).
 */
export default async function setup(project: TestProject): Promise<() => void> {
  if (cliIsStale()) await buildCli();
  const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-test-"));
  const database = await openDatabase({ kind: "pglite-memory" });
  await database.migrate();
  const client = (database.db as unknown as { $client: { dumpDataDir(c: "none"): Promise<Blob> } }).$client;
  const dump = await client.dumpDataDir("none");
  await database.close();
  const file = path.join(dir, "pglite-template.tar");
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide("pgliteTemplate", file);
  return () => rmSync(dir, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
