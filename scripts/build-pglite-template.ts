/**
 * Builds templates/pglite-data.tar.gz: an embedded database with every migration applied, which
 * `countersign start` loads into a fresh data dir instead of running PGlite's own first setup
 * (see src/store/pglite-template.ts). Skips the work when the template already holds every
 * migration, each file as it is now, and was made by the installed PGlite; `--force` rebuilds anyway.
 * Run: node --import tsx scripts/build-pglite-template.ts [--force] (`prepack` does; the tests'
 * global setup calls buildPgliteTemplate).
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openDatabase } from "../src/store/db.ts";
import { shippedMigrations } from "../src/store/migrations.ts";
import { PGLITE_TEMPLATE, PGLITE_TEMPLATE_META, installedPgliteVersion, readTemplateMeta, type TemplateMeta } from "../src/store/pglite-template.ts";

function isCurrent(meta: TemplateMeta | undefined, wanted: TemplateMeta): boolean {
  return meta !== undefined && meta.pglite === wanted.pglite && JSON.stringify(meta.migrations) === JSON.stringify(wanted.migrations);
}

/** Writes beside the target and renames, so a start that reads the template never sees half a file. */
function writeAtomically(file: string, data: Uint8Array | string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, data);
  renameSync(temporary, file);
}

/** Builds the template unless it is current (or `force`); returns a line saying what it did. */
export async function buildPgliteTemplate({ force = false } = {}): Promise<string> {
  const started = performance.now();
  const wanted: TemplateMeta = { pglite: installedPgliteVersion(), migrations: shippedMigrations() };
  if (!force && isCurrent(readTemplateMeta(), wanted)) return `pglite template: up to date (${wanted.migrations.length} migrations, PGlite ${wanted.pglite})`;
  const database = await openDatabase({ kind: "pglite-memory" });
  try {
    await database.migrate();
    const client = (database.db as unknown as { $client: { dumpDataDir(compression: "gzip"): Promise<Blob> } }).$client;
    const dump = new Uint8Array(await (await client.dumpDataDir("gzip")).arrayBuffer());
    mkdirSync(path.dirname(PGLITE_TEMPLATE), { recursive: true });
    // The dump first, then the meta that vouches for it: never new meta beside an old dump.
    writeAtomically(PGLITE_TEMPLATE, dump);
    writeAtomically(PGLITE_TEMPLATE_META, JSON.stringify(wanted, null, 2) + "\n");
    return `pglite template: ${path.relative(process.cwd(), PGLITE_TEMPLATE)} (${(dump.byteLength / 1e6).toFixed(1)} MB, ${wanted.migrations.length} migrations) in ${((performance.now() - started) / 1000).toFixed(1)} s`;
  } finally {
    await database.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await buildPgliteTemplate({ force: process.argv.includes("--force") }));
