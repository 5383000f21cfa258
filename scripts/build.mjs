#!/usr/bin/env node
// Builds what the package ships: the `countersign` command as ESM in dist/ (one entry, a chunk
// per lazily imported command) and the client with its .d.ts in dist/client/. dist/ holds
// Countersign's own code only: every package stays in node_modules, installed from
// package.json's `dependencies`. Run by `npm run build` and by `prepack`.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DIST = path.join(ROOT, "dist");
export const CLI_ENTRY = path.join(DIST, "cli.js");

/**
 * Bundles src/cli.ts into dist/ (leaving dist/client/ alone); throws naming what failed.
 * Safe while the previous build runs (a test run rebuilds while another spawns the CLI): each
 * file is replaced by a rename, chunks before the entry that imports them, and a superseded
 * chunk is removed only once it is `keepSupersededMs` old, when no process can still be
 * starting from it (0 for a build that is packed, so the package carries no stale chunk).
 */
export async function buildCli({ keepSupersededMs = 10 * 60_000 } = {}) {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { cli: "src/cli.ts" },
    outdir: DIST,
    // Every chunk sits directly in dist/, one level below the package root as every module in
    // src/ is, so src/package-path.ts finds migrations/ and package.json from both.
    chunkNames: "[name]-[hash]",
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    jsx: "automatic",
    jsxImportSource: "hono/jsx",
    // Users' installs hold the packages, so their `npm audit` and `overrides` reach what runs.
    packages: "external",
    logLevel: "warning",
    write: false,
  });
  mkdirSync(DIST, { recursive: true });
  const written = new Set();
  for (const file of [...result.outputFiles].sort((a, b) => Number(a.path === CLI_ENTRY) - Number(b.path === CLI_ENTRY))) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents, { mode: file.path === CLI_ENTRY ? 0o755 : 0o644 });
    renameSync(temporary, file.path);
    written.add(path.basename(file.path));
  }
  // dist/ holds what this build wrote and the client: any other file (a superseded chunk, or one
  // no build writes any more) goes once old enough. A `.tmp` is another build's, mid-rename.
  const superseded = Date.now() - keepSupersededMs;
  for (const name of readdirSafe(DIST)) {
    const full = path.join(DIST, name);
    const stat = statSync(full, { throwIfNoEntry: false });
    if (stat?.isFile() && !name.endsWith(".tmp") && !written.has(name) && stat.mtimeMs <= superseded) rmSync(full, { force: true });
  }
}

/** Whether dist/cli.js is missing or older than a source it is built from. */
export function cliIsStale() {
  let built;
  try {
    built = statSync(CLI_ENTRY).mtimeMs;
  } catch {
    return true;
  }
  const inputs = [path.join(ROOT, "src"), fileURLToPath(import.meta.url), path.join(ROOT, "package-lock.json")];
  return inputs.some((input) => newestMtime(input) > built);
}

function newestMtime(file) {
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(file).map((name) => newestMtime(path.join(file, name))));
}

/** Compiles src/client (no dependencies) file for file with its .d.ts into dist/client/. */
export function buildClient() {
  rmSync(path.join(DIST, "client"), { recursive: true, force: true });
  const tsc = spawnSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", path.join(ROOT, "tsconfig.client.json")], {
    stdio: "inherit",
  });
  if (tsc.status !== 0) throw new Error("the client did not compile (tsconfig.client.json, errors above); it may import only src/client/");
}

function readdirSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // `npm start` passes --if-stale, so a clone that pulled new sources does not run an old build.
  if (process.argv.includes("--if-stale") && !cliIsStale()) process.exit(0);
  const started = performance.now();
  try {
    await buildCli({ keepSupersededMs: 0 });
    buildClient();
  } catch (err) {
    console.error(`countersign build: ${err.message}`);
    process.exit(1);
  }
  console.log(`countersign build: dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
