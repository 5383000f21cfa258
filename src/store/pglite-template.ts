import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { extract } from "tar";
import { packagePath } from "../package-path.ts";
import { shippedMigrations, type ShippedMigration } from "./migrations.ts";

/**
 * A migrated PGlite data dir, dumped at build time (scripts/build-pglite-template.ts). PGlite's
 * own first setup (initdb in a second WASM instance) takes seconds and leaves ~500 MB more
 * resident; unpacking this dump skips it. It is only a head start: the normal migrate still runs
 * after it, so a template older than the code's migrations is brought up to date, and one whose
 * migrations are not the first of the code's (another baseline) is not used.
 */
export const PGLITE_TEMPLATE = packagePath("templates/pglite-data.tar.gz");
export const PGLITE_TEMPLATE_META = packagePath("templates/pglite-data.json");

const STAGING_PREFIX = ".template-";

export interface TemplateMeta {
  /** The PGlite that made the dump: another version may not read its files. */
  pglite: string;
  /** The migrations the dump already holds, in journal order, as drizzle recorded them (journal `when`, file SHA-256). */
  migrations: ShippedMigration[];
}

/** Read from its package.json, which PGlite does not export: found above its resolved entry. */
export function installedPgliteVersion(): string {
  let dir = path.dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"));
  while (!existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;
}

export function readTemplateMeta(file = PGLITE_TEMPLATE_META): TemplateMeta | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as TemplateMeta;
  } catch {
    return undefined;
  }
}

/** Whether a PGlite data dir has been set up (PGlite checks the same file). */
export function hasPgliteData(dataDir: string): boolean {
  return existsSync(path.join(dataDir, "PG_VERSION"));
}

/** Whether the template's migrations are the first of the code's, each the same file and journal entry: migrate can go on from them. */
export function templateFits(meta: TemplateMeta, shipped: readonly ShippedMigration[] = shippedMigrations()): boolean {
  return (
    meta.migrations.length <= shipped.length &&
    meta.migrations.every((m, i) => m.tag === shipped[i]!.tag && m.when === shipped[i]!.when && m.hash === shipped[i]!.hash)
  );
}

/**
 * Unpacks the template into a data dir that has no database yet, so PGlite opens it as it would
 * on a restart; false (PGlite then runs its own first setup) when no template was built (a
 * checkout that never ran the build), another PGlite made it, or its migrations do not fit the
 * code's (a checkout whose baseline changed since the build). Unpacked on disk rather than
 * handed to PGlite's `loadDataDir`, which copies it through the WASM file system and leaves
 * that process ~130 MB larger (docs/notes/pglite.md).
 */
export function unpackTemplate(dataDir: string, installedPglite: string): boolean {
  const meta = readTemplateMeta();
  if (!meta || meta.pglite !== installedPglite || !Array.isArray(meta.migrations) || !templateFits(meta) || !existsSync(PGLITE_TEMPLATE)) return false;
  // One process owns a data dir, so a staging dir already here is what a killed unpack left.
  for (const name of readdirSync(dataDir)) if (name.startsWith(STAGING_PREFIX)) rmSync(path.join(dataDir, name), { recursive: true, force: true });
  const staging = mkdtempSync(path.join(dataDir, STAGING_PREFIX));
  try {
    // PGlite names members from "/" (its data dir's root); tar strips that with an info-level
    // warning, which is what we want. Any other warning is an entry not written: fail loudly.
    const problems: string[] = [];
    extract({
      file: PGLITE_TEMPLATE,
      cwd: staging,
      sync: true,
      onwarn: (code, message) => void (code === "TAR_ENTRY_INFO" || problems.push(`${code}: ${message}`)),
    });
    if (problems.length > 0)
      throw new Error(
        `could not unpack the database template ${PGLITE_TEMPLATE} (${problems.join("; ")}); reinstall Countersign, or in a checkout rebuild it with: node --import tsx scripts/build-pglite-template.ts --force`,
      );
    // PG_VERSION last: it is what marks the dir as set up, so an unpack cut short is redone, and
    // what such a cut left behind (without PG_VERSION no database uses it) is replaced.
    const names = readdirSync(staging).sort((a, b) => Number(a === "PG_VERSION") - Number(b === "PG_VERSION"));
    for (const name of names) {
      rmSync(path.join(dataDir, name), { recursive: true, force: true });
      renameSync(path.join(staging, name), path.join(dataDir, name));
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return true;
}
