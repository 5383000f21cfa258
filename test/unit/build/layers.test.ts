import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { LAYERS, layerOverrides, STANDALONE } from "../../../scripts/layers.mjs";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../../..");
const BIOME = path.join(ROOT, "node_modules/.bin/biome");

/** Lints `files` (path → text) laid out as a copy of src/ would hold them, with the project's biome.json. */
async function lintPlanted(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), "countersign-layers-"));
  try {
    cpSync(path.join(ROOT, "biome.json"), path.join(dir, "biome.json"));
    const config = JSON.parse(readFileSync(path.join(dir, "biome.json"), "utf8"));
    config.$schema = undefined;
    config.vcs = { enabled: false };
    writeFileSync(path.join(dir, "biome.json"), JSON.stringify(config));
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    try {
      const { stdout, stderr } = await run(BIOME, ["lint", "--diagnostic-level=error", "src"], { cwd: dir });
      return { code: 0, output: stdout + stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, output: e.stdout + e.stderr };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('layers (CONTRIBUTING.md, "Layers")', () => {
  it("every folder and file directly under src/ belongs to exactly one layer", () => {
    const assigned = [...LAYERS.flatMap((l) => l.entries), ...STANDALONE];
    const entries = readdirSync(path.join(ROOT, "src"));
    for (const entry of entries) {
      expect(
        assigned.filter((a) => a === entry),
        `src/${entry} is in no layer (or in two): add it to scripts/layers.mjs`,
      ).toHaveLength(1);
    }
    for (const entry of assigned) expect(entries, `scripts/layers.mjs names src/${entry}, which does not exist`).toContain(entry);
  });

  it("biome.json holds the overrides scripts/layers.mjs makes (run `node scripts/layers.mjs --write`)", () => {
    expect(JSON.parse(readFileSync(path.join(ROOT, "biome.json"), "utf8")).overrides).toEqual(layerOverrides());
  });

  it("refuses an upward import, naming the layers", async () => {
    const { code, output } = await lintPlanted({
      "src/plan/planted.ts": 'import { ServiceError } from "../service/errors.ts";\nexport const planted = ServiceError;\n',
      "src/service/errors.ts": "export class ServiceError extends Error {}\n",
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(/a plan module may not import the service layer above it/);
  });

  it("refuses a door reaching past a capability's index.ts, and takes the index", async () => {
    const { code, output } = await lintPlanted({
      "src/web/planted.ts":
        'import { decide } from "../service/decide/decide.ts";\nimport { other } from "../service/decide/index.ts";\nexport const planted = [decide, other];\n',
      "src/service/decide/decide.ts": "export const decide = 1;\n",
      "src/service/decide/index.ts": 'export { decide as other } from "./decide.ts";\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(/through its index\.ts only/);
    expect(output.match(/noRestrictedImports/g)).toHaveLength(1);
  });

  it("refuses an import cycle, type-only imports included", async () => {
    const { code, output } = await lintPlanted({
      "src/plan/a.ts": 'import type { B } from "./b.ts";\nexport type A = { b?: B };\n',
      "src/plan/b.ts": 'import type { A } from "./a.ts";\nexport type B = { a?: A };\n',
    });
    expect(code).not.toBe(0);
    expect(output).toMatch(/noImportCycles/);
  });

  it("the tree as it is passes: no cycle, no upward import, doors through index files", async () => {
    const { code, output } = await run(BIOME, ["lint", "--diagnostic-level=error", "--max-diagnostics=20", "src"], { cwd: ROOT }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, output: err.stdout + err.stderr }),
    );
    expect(output.match(/noRestrictedImports|noImportCycles/g) ?? [], output).toEqual([]);
    expect(code, output).toBe(0);
  }, 60_000);
});
