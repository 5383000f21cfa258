#!/usr/bin/env node
// Builds what the package ships: the `countersign` command as ESM in dist/ (one entry, a chunk
// per lazily imported command), the client with its .d.ts in dist/client/, and dist/NOTICE.
// Packages stay in node_modules, installed from package.json's `dependencies`, except postgres:
// bundled, so the fixes in patches/ ship applied. Run by `npm run build` and by `prepack`.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { applyEdits, patchedInBundle, patches } from "../patches/postgres-restart.mjs";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DIST = path.join(ROOT, "dist");
export const CLI_ENTRY = path.join(DIST, "cli.js");
export const NOTICE = path.join(DIST, "NOTICE");

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
    plugins: [installedPackagesPlugin(), postgresRestartPlugin()],
    // The bundled packages carry no legal comments; dist/NOTICE names them and their licenses.
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
    write: false,
  });
  const bundled = result.outputFiles.map((f) => f.text).join("\n");
  const missing = patchedInBundle.filter((p) => !p.pattern.test(bundled));
  if (missing.length > 0)
    throw new Error(`the bundled postgres driver lacks the restart patch (${missing.map((p) => p.edit).join("; ")}); see patches/README.md`);
  const files = [...result.outputFiles, { path: NOTICE, contents: notice(bundledPackages(result.metafile)) }];
  mkdirSync(DIST, { recursive: true });
  const written = new Set();
  for (const file of files.sort((a, b) => Number(a.path === CLI_ENTRY) - Number(b.path === CLI_ENTRY))) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents, { mode: file.path === CLI_ENTRY ? 0o755 : 0o644 });
    renameSync(temporary, file.path);
    written.add(path.basename(file.path));
  }
  const superseded = Date.now() - keepSupersededMs;
  for (const name of readdirSafe(DIST)) {
    const full = path.join(DIST, name);
    if (name.endsWith(".js") && !written.has(name) && statSync(full).mtimeMs <= superseded) rmSync(full, { force: true });
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
  const inputs = [path.join(ROOT, "src"), path.join(ROOT, "patches"), fileURLToPath(import.meta.url), path.join(ROOT, "package-lock.json")];
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

/**
 * Leaves every package to node_modules (and names Node's built-ins `node:…`), except postgres.
 * drizzle's postgres-js adapter imports postgres, which users do not install, so it is bundled
 * with it; what the adapter imports from the rest of drizzle is the installed drizzle-orm's, so
 * the process still holds one drizzle.
 */
function installedPackagesPlugin() {
  const drizzleAdapter = /^(.*[\\/]node_modules[\\/]drizzle-orm)[\\/]postgres-js[\\/][^\\/]+$/;
  return {
    name: "installed-packages",
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path)) return { path: args.path.startsWith("node:") ? args.path : `node:${args.path}`, external: true };
        if (args.path === "postgres" || /^drizzle-orm\/postgres-js(\/|$)/.test(args.path)) return undefined;
        return { path: args.path, external: true };
      });
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        const adapter = drizzleAdapter.exec(args.importer);
        if (!adapter) return undefined;
        const drizzleRoot = adapter[1];
        const target = path.resolve(path.dirname(args.importer), args.path);
        if (path.dirname(target) === path.join(drizzleRoot, "postgres-js")) return undefined;
        const subpath = path
          .relative(drizzleRoot, target)
          .split(path.sep)
          .join("/")
          .replace(/\.js$/, "")
          .replace(/(^|\/)index$/, "");
        const { exports } = JSON.parse(readFileSync(path.join(drizzleRoot, "package.json"), "utf8"));
        if (!exports[subpath ? `./${subpath}` : "."])
          return {
            errors: [{ text: `drizzle's postgres-js adapter imports ${args.path}, which drizzle-orm does not export; bundle it or import it another way` }],
          };
        return { path: subpath ? `drizzle-orm/${subpath}` : "drizzle-orm", external: true };
      });
    },
  };
}

/** The packages whose code a build put into dist/, each with the directory it came from. */
function bundledPackages(metafile) {
  const found = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^(.*node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(input);
    if (match) found.set(match[2], path.resolve(ROOT, match[1]));
  }
  return [...found].sort(([a], [b]) => a.localeCompare(b));
}

/** dist/NOTICE: the licenses of the code bundled into dist/ (what is installed carries its own). */
function notice(packages) {
  const sections = packages.map(([name, dir]) => {
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    const source = pkg.homepage ?? (typeof pkg.repository === "string" ? pkg.repository : pkg.repository?.url);
    const license = pkg.license === "Apache-2.0" ? "Apache-2.0, the license in LICENSE" : pkg.license;
    const patched = patches.some((p) => p.package === name) ? " Bundled with the fixes in patches/ (patches/README.md in Countersign's source)." : "";
    const files = readdirSync(dir).filter((file) => /^(licen[cs]e|unlicense|copying|notice)/i.test(file));
    const texts = files.map((file) => `\n${readFileSync(path.join(dir, file), "utf8").trim()}\n`);
    return `${name} ${pkg.version} (${source}): ${license}.${patched}\n${texts.join("")}`;
  });
  return [
    "Countersign's dist/ bundles code from the packages below; every other package it uses is",
    "installed beside it, with its own license. Countersign itself is under LICENSE (Apache-2.0).",
    "",
    ...sections,
  ].join("\n");
}

/** Applies patches/postgres-restart.mjs to the driver as it is bundled, or fails the build. */
function postgresRestartPlugin() {
  return {
    name: "postgres-restart-patch",
    setup(b) {
      // The ES module build (src/) is the one an ESM bundle for Node resolves.
      b.onLoad({ filter: /[\\/]node_modules[\\/]postgres[\\/]src[\\/](connection|index)\.js$/ }, (args) => {
        // Every patch of this file, in the order patches lists them (apply.mjs applies them so too).
        const mine = patches.filter((p) => p.package === "postgres" && p.files.includes(`src/${path.basename(args.path)}`));
        const { version } = JSON.parse(readFileSync(path.join(args.path, "../../package.json"), "utf8"));
        let text = readFileSync(args.path, "utf8");
        for (const patch of mine) {
          if (!patch.versions.includes(version)) {
            return { errors: [{ text: `postgres@${version} is not a version patches/postgres-restart.mjs was written for (${patch.versions.join(", ")})` }] };
          }
          const result = applyEdits(text, patch.edits);
          if (result.problems) return { errors: result.problems.map((problem) => ({ text: `${args.path} ${problem}` })) };
          text = result.text;
        }
        return { contents: text, loader: "js" };
      });
    },
  };
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
