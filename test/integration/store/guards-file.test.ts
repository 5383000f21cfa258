import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_FOLDER, sql } from "../../../src/store/db.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";

const GUARDS = "0001_guards.sql";

interface FileFunction {
  /** `name(type, …)`, argument names dropped, as to_regprocedure reads it. */
  signature: string;
  body: string;
  securityDefiner: boolean;
  /** The SET clause as pg_proc.proconfig holds it (`search_path=pg_catalog, pg_temp`), if any. */
  config: string[];
}

/** The statements of a migration file, as drizzle's migrator splits them, without their leading comment lines. */
function statementsOf(text: string): string[] {
  return text
    .split("--> statement-breakpoint")
    .map((s) => s.replace(/^(\s*--[^\n]*\n)*/, "").trim())
    .filter((s) => s !== "");
}

function functionsOf(statements: string[]): FileFunction[] {
  return statements.flatMap((statement) => {
    const m = /^CREATE (?:OR REPLACE )?FUNCTION (\w+)\(([^)]*)\)([\s\S]*?) AS \$\$([\s\S]*)\$\$ LANGUAGE plpgsql;/.exec(statement);
    if (!m) return [];
    const [, name, args, attributes, body] = m;
    const types = args!
      .split(",")
      .map((a) => a.trim().split(/\s+/).slice(1).join(" "))
      .filter((t) => t !== "");
    const set = /SET (\w+) = ([^\n]*?)(?:\s+AS)?$/m.exec(attributes!.trim());
    return [
      {
        signature: `${name}(${types.join(",")})`,
        body: body!,
        securityDefiner: /\bSECURITY DEFINER\b/.test(attributes!),
        config: set ? [`${set[1]}=${set[2]!.trim()}`] : [],
      },
    ];
  });
}

const triggersOf = (statements: string[]): string[] =>
  statements.filter((s) => s.startsWith("CREATE TRIGGER ")).map((s) => s.replace(/\s+/g, " ").replace(/;$/, ""));

/**
 * Each guard function's source lives in one place, migrations/0001_guards.sql, and that file is
 * what a migrated database runs: every function and trigger in the database is in the file, in the
 * same form, and the file holds nothing the database lacks. A change made to the database some
 * other way (another migration, a CREATE OR REPLACE by hand in a migration) fails here.
 */
describe.each(databaseKinds)("the guards file is the database's guards on $name", (kind) => {
  const h = useHarness(kind);
  const statements = statementsOf(readFileSync(path.join(MIGRATIONS_FOLDER, GUARDS), "utf8"));
  const fileFunctions = functionsOf(statements);

  it("no other migration creates a function or a trigger, and the file creates each function once", () => {
    const others = readdirSync(MIGRATIONS_FOLDER).filter((f) => f.endsWith(".sql") && f !== GUARDS);
    expect(others.length).toBeGreaterThan(0);
    for (const file of others) expect(readFileSync(path.join(MIGRATIONS_FOLDER, file), "utf8"), file).not.toMatch(/CREATE (OR REPLACE )?(FUNCTION|TRIGGER)/i);
    expect(statements.filter((s) => /^CREATE (OR REPLACE )?FUNCTION/.test(s))).toHaveLength(fileFunctions.length);
    expect(new Set(fileFunctions.map((f) => f.signature)).size).toBe(fileFunctions.length);
  });

  it("every function in the database has the file's body, SECURITY DEFINER and SET clause, and no other exists", async () => {
    const wanted = new Map<string, FileFunction>();
    for (const f of fileFunctions) {
      const [row] = await h.database.rows<{ name: string | null }>(sql`SELECT to_regprocedure(${f.signature})::text AS name`);
      expect(row?.name, `${f.signature} is in the database`).toBeTruthy();
      wanted.set(row!.name!, f);
    }
    const live = await h.database.rows<{ name: string; body: string; secdef: boolean; config: string[] | null }>(sql`
      SELECT p.oid::regprocedure::text AS name, p.prosrc AS body, p.prosecdef AS secdef, p.proconfig AS config
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
       ORDER BY 1`);
    expect(live.map((f) => f.name).sort()).toEqual([...wanted.keys()].sort());
    for (const f of live) {
      const file = wanted.get(f.name)!;
      expect(f.body, `${f.name}: body`).toBe(file.body);
      expect(f.secdef, `${f.name}: SECURITY DEFINER`).toBe(file.securityDefiner);
      expect(f.config ?? [], `${f.name}: SET`).toEqual(file.config);
    }
  });

  it("every trigger in the database is one of the file's, as the file writes it", async () => {
    const live = await h.database.rows<{ def: string }>(sql`
      SELECT pg_get_triggerdef(t.oid) AS def FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND NOT t.tgisinternal`);
    const unqualified = (def: string) => def.replace(/ ON public\./, " ON ").replace(/ FUNCTION public\./, " FUNCTION ");
    expect(live.map((t) => unqualified(t.def)).sort()).toEqual(triggersOf(statements).sort());
  });
});
