import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, sql } from "../../../src/store/db.ts";
import { shippedMigrations } from "../../../src/store/migrations.ts";
import { hasPgliteData, installedPgliteVersion, readTemplateMeta, templateFits, unpackTemplate } from "../../../src/store/pglite-template.ts";

/** A fresh embedded data dir starts from the migrated template built at `prepack` (and by the tests' global setup). */
describe("PGlite template", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "countersign-template-"));
    if (!readTemplateMeta())
      throw new Error(
        "templates/pglite-data.json is missing: build it with `node --import tsx scripts/build-pglite-template.ts` (npm pack and the tests' global setup run it)",
      );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is not used when another PGlite made it: the data dir is left to PGlite's own setup", () => {
    const dataDir = path.join(dir, "other-pglite");
    mkdirSync(dataDir);
    expect(unpackTemplate(dataDir, "0.0.0-not-installed")).toBe(false);
    expect(existsSync(path.join(dataDir, "PG_VERSION"))).toBe(false);
  });

  it("fits only code whose first migrations are its own, file and journal entry: a regenerated baseline leaves it unused", () => {
    const meta = readTemplateMeta()!;
    const shipped = shippedMigrations();
    expect(templateFits(meta, shipped)).toBe(true);
    expect(templateFits(meta, [...shipped, { tag: "9999_next", when: Number.MAX_SAFE_INTEGER, hash: "0".repeat(64) }])).toBe(true);
    expect(
      templateFits(
        meta,
        shipped.map((m, i) => (i === 0 ? { ...m, when: m.when + 1 } : m)),
      ),
    ).toBe(false);
    expect(
      templateFits(
        meta,
        shipped.map((m, i) => (i === 1 ? { ...m, hash: "0".repeat(64) } : m)),
      ),
    ).toBe(false);
  });

  it("unpacks over what a killed unpack left (its staging dir too) and keeps Countersign's own files in the data dir", () => {
    const dataDir = path.join(dir, "interrupted");
    mkdirSync(path.join(dataDir, "base"), { recursive: true });
    writeFileSync(path.join(dataDir, "base", "half-written"), "x");
    writeFileSync(path.join(dataDir, "grant-private.pem"), "kept");
    mkdirSync(path.join(dataDir, ".template-killed", "base"), { recursive: true });
    expect(hasPgliteData(dataDir)).toBe(false);
    expect(unpackTemplate(dataDir, installedPgliteVersion())).toBe(true);
    expect(hasPgliteData(dataDir)).toBe(true);
    expect(existsSync(path.join(dataDir, "base", "half-written"))).toBe(false);
    expect(readFileSync(path.join(dataDir, "grant-private.pem"), "utf8")).toBe("kept");
    expect(readdirSync(dataDir).filter((name) => name.startsWith(".template-"))).toEqual([]);
  });

  it("a fresh data dir opens with the template's migrations already applied; migrate brings it to the code's", async () => {
    const dataDir = path.join(dir, "fresh");
    const database = await openDatabase({ kind: "pglite", dataDir });
    try {
      const applied = async () => (await database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`))[0]!.n;
      const journal = JSON.parse(readFileSync(path.join(import.meta.dirname, "../../../migrations/meta/_journal.json"), "utf8")) as { entries: unknown[] };
      expect(await applied()).toBe(readTemplateMeta()!.migrations.length);
      await database.migrate();
      expect(await applied()).toBe(journal.entries.length);
      // A usable database, not just files: the schema's tables answer.
      expect(await database.rows(sql`SELECT id FROM plans LIMIT 1`)).toEqual([]);
    } finally {
      await database.close();
    }
  }, 60_000);
});
