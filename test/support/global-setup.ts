import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { MIGRATIONS_FOLDER, openDatabase } from "../../src/store/db.ts";
import { installedPgliteVersion } from "../../src/store/pglite-template.ts";
import { buildCli, cliIsStale } from "../../scripts/build.mjs";
import { buildPgliteTemplate } from "../../scripts/build-pglite-template.ts";

/** Kept between runs (and shared by every run in this checkout): one dump per migrations and PGlite. */
const CACHE_DIR = fileURLToPath(new URL("../../node_modules/.cache/countersign-tests/", import.meta.url));
/** A dump no run has used for this long is removed; a run in progress may still read an outdated one. */
const UNUSED_MS = 3 * 3600_000;

/**
 * Builds dist/cli.js when a source is newer, so the tests that spawn `countersign` run what
 * users run, and the PGlite template `start` unpacks when a migration or PGlite changed.
 * Provides a dump of a migrated PGlite database, so each test file starts its own
 * copy in under a second instead of booting and migrating a fresh one (several seconds each).
 * The dump is made once per set of migrations and PGlite version and kept in node_modules/.cache:
 * making it cost ~8 s of CPU, most of what a one-file run spent before its test began. With
 * TEST_DATABASE_URL, also migrates one PostgreSQL database for the run to copy (see below).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (cliIsStale()) await buildCli();
  await buildPgliteTemplate();
  project.provide("pgliteTemplate", await migratedDump());
  const template = process.env.TEST_DATABASE_URL ? await migratedPostgres(process.env.TEST_DATABASE_URL) : undefined;
  project.provide("postgresTemplate", template?.name);
  return async () => {
    await template?.drop();
  };
}

/**
 * A migrated database on TEST_DATABASE_URL's server, this run's own, that each test file's
 * PostgreSQL database is copied from (CREATE DATABASE … TEMPLATE) instead of migrating afresh.
 */
async function migratedPostgres(adminUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `cs_template_${randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl, { onnotice: () => {}, max: 1 });
  const drop = async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end({ timeout: 5 });
  };
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    // Closed before any copy is made: PostgreSQL copies only a database nobody is connected to.
    const database = await openDatabase({ kind: "postgres", url: url.toString() });
    try {
      await database.migrate();
    } finally {
      await database.close();
    }
  } catch (err) {
    await drop();
    throw err;
  }
  return { name, drop };
}

async function migratedDump(): Promise<string> {
  const file = path.join(CACHE_DIR, `pglite-${dumpKey()}.tar`);
  if (existsSync(file)) {
    const now = new Date();
    utimesSync(file, now, now); // in use: see UNUSED_MS
    return file;
  }
  const database = await openDatabase({ kind: "pglite-memory" });
  let dump: Blob;
  try {
    await database.migrate();
    const client = (database.db as unknown as { $client: { dumpDataDir(c: "none"): Promise<Blob> } }).$client;
    dump = await client.dumpDataDir("none");
  } finally {
    await database.close();
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  for (const name of readdirSync(CACHE_DIR)) {
    const other = path.join(CACHE_DIR, name);
    if (Date.now() - statSync(other).mtimeMs > UNUSED_MS) rmSync(other, { force: true });
  }
  // Written beside and renamed: a run starting meanwhile never reads half a dump.
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, Buffer.from(await dump.arrayBuffer()));
  renameSync(temporary, file);
  return file;
}

/** What the dump depends on: the PGlite that writes it and every migration's text, not only its tag. */
function dumpKey(): string {
  const hash = createHash("sha256").update(`pglite ${installedPgliteVersion()}\n`);
  const sql = readdirSync(MIGRATIONS_FOLDER)
    .filter((name) => name.endsWith(".sql"))
    .sort();
  for (const name of ["meta/_journal.json", ...sql]) {
    hash
      .update(`${name}\n`)
      .update(readFileSync(path.join(MIGRATIONS_FOLDER, name)))
      .update("\n");
  }
  return hash.digest("hex").slice(0, 16);
}

declare module "vitest" {
  export interface ProvidedContext {
    pgliteTemplate: string;
    /** The migrated database each test file's PostgreSQL database copies; unset without TEST_DATABASE_URL. */
    postgresTemplate: string | undefined;
  }
}
