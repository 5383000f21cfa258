import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CLI_ENTRY, DIST, ROOT } from "../../../scripts/build.mjs";

/*
 * dist/ (built by the global setup) holds Countersign's own code only; every package it imports is
 * installed from package.json's `dependencies`, so a package missing there fails only in a user's
 * install, and one listed but never imported is dead weight.
 */

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
};
/** `--import` this: logs `importer<TAB>specifier<TAB>resolved URL` for each ESM resolve, to $COUNTERSIGN_RESOLVE_LOG. */
const RECORD_RESOLVES = `data:text/javascript,${encodeURIComponent(`
  import { register } from "node:module";
  register(${JSON.stringify(
    `data:text/javascript,${encodeURIComponent(`
      import { appendFileSync } from "node:fs";
      let log;
      export function initialize(data) { log = data.log; }
      export async function resolve(specifier, context, next) {
        const resolved = await next(specifier, context);
        appendFileSync(log, [context.parentURL ?? "", specifier, resolved.url].join("\\t") + "\\n");
        return resolved;
      }`)}`,
  )}, { data: { log: process.env.COUNTERSIGN_RESOLVE_LOG } });`)}`;

/**
 * What a file imports, read from esbuild's (and tsc's) output: `import … from "x"`, `export … from
 * "x"` and `import "x"` at the start of a line, `import("x")` anywhere, and `require("x")` (the
 * shim esbuild writes for bundled CommonJS, or createRequire's).
 */
const IMPORT =
  /^(?:import|export)\b[^;"']*?\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)|\brequire\(\s*["']([^"']+)["']\s*\)/gm;

function importsOf(text: string): string[] {
  return [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2] ?? m[3] ?? m[4])!);
}

/**
 * dist/cli.js and every chunk it reaches, plus the client when it is built: a chunk that a newer
 * build superseded stays in dist/ for a while (scripts/build.mjs) and is left out.
 */
function distFiles(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const visit = (file: string) => {
    if (found.has(file)) return;
    const imports = importsOf(readFileSync(file, "utf8"));
    found.set(file, imports);
    for (const specifier of imports) if (specifier.startsWith(".")) visit(path.resolve(path.dirname(file), specifier));
  };
  visit(CLI_ENTRY);
  const client = path.join(DIST, "client");
  if (existsSync(client)) for (const name of readdirSync(client).filter((n) => n.endsWith(".js"))) visit(path.join(client, name));
  return found;
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageOf(specifier: string): string {
  return specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");
}

/** Each bare import as `dist/file.js imports "specifier"`, with its package. */
function bareImports(): { where: string; specifier: string; name: string }[] {
  return [...distFiles()].flatMap(([file, imports]) =>
    imports
      .filter((specifier) => !specifier.startsWith("."))
      .map((specifier) => ({ where: `${path.relative(ROOT, file)} imports "${specifier}"`, specifier, name: packageOf(specifier) })),
  );
}

describe("what dist/ imports", () => {
  it("is a node: built-in or a package in dependencies (or the optional peer @openai/agents), nothing else", () => {
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies ?? {})]);
    const undeclared = bareImports().filter(({ specifier, name }) => !specifier.startsWith("node:") && !declared.has(name));
    expect(
      undeclared.map((i) => i.where),
      "declare each in package.json `dependencies` (npm install --save-prod), or users' installs fail to load it",
    ).toEqual([]);
  });

  it("bundles no package: each is imported from node_modules, the database drivers too", () => {
    // esbuild heads each module it bundles with its path: a package's would start node_modules/.
    const bundled = [...distFiles().keys()].filter((file) => /^\/\/ node_modules\//m.test(readFileSync(file, "utf8")));
    expect(
      bundled.map((file) => path.relative(ROOT, file)),
      "scripts/build.mjs leaves every package external; declare it in `dependencies` instead",
    ).toEqual([]);
    const specifiers = new Set(bareImports().map(({ specifier }) => specifier));
    expect(specifiers).toContain("postgres");
    expect(specifiers).toContain("drizzle-orm/postgres-js");
  });

  it("uses every dependency, so none is installed for nothing", () => {
    const used = new Set(bareImports().map(({ name }) => name));
    const unused = Object.keys(pkg.dependencies).filter((name) => !used.has(name));
    expect(unused, "nothing in dist/ imports these: move them to devDependencies (or drop them)").toEqual([]);
  });

  it("loads, with every named import found in the installed packages", async () => {
    const chunks = [...distFiles().keys()].filter((file) => file !== CLI_ENTRY && !file.includes(`${path.sep}client${path.sep}`));
    // The packages a chunk imports lazily (the database drivers) load only when imported.
    const lazy = [...new Set(bareImports().map(({ specifier }) => specifier))].filter((s) => !s.startsWith("node:") && s !== "@openai/agents");
    const dir = mkdtempSync(path.join(os.tmpdir(), "countersign-dist-imports-"));
    const log = path.join(dir, "imports");
    try {
      // Linking each chunk checks its named imports against what Node finds in the installed
      // packages (CommonJS ones included), which a bundle never did; cli.js would run a command.
      const script = `for (const s of ${JSON.stringify([...chunks.map((f) => pathToFileURL(f).href), ...lazy])}) await import(s); process.exit(0);`;
      // From dist/, so the packages resolve as they do for the chunks.
      await run(process.execPath, ["--import", RECORD_RESOLVES, "--input-type=module", "-e", script], {
        cwd: DIST,
        env: { ...process.env, COUNTERSIGN_RESOLVE_LOG: log },
        timeout: 60_000,
      });
      const resolved = readFileSync(log, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split("\t") as [string, string, string]);
      expect(resolved.some(([, , url]) => url.includes("/node_modules/drizzle-orm/"))).toBe(true);
      expect(resolved.some(([, , url]) => url.includes("/node_modules/postgres/"))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
