import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../../src/store/db.ts";
import { statusIn, statusIs } from "../../../src/store/plan-status-sql.ts";
import { plans } from "../../../src/store/schema.ts";
import { postgresKind } from "../../support/databases.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL;

/**
 * The PostgreSQL database sends drizzle's statements as named ones (store/named-statements.ts):
 * one round trip each, where an unnamed statement with parameters took two. A named statement is
 * listed in its connection's pg_prepared_statements, an unnamed one never is; reading the list in
 * the same transaction pins the connection. PostgreSQL chooses how to plan them (`auto`).
 */
describe.skipIf(!testDatabaseUrl)("named statements on postgres", () => {
  let database: Database;
  beforeAll(async () => {
    database = await postgresKind!.open(); // migrated: the plan-status test reads `plans`
  });
  afterAll(async () => {
    await database?.close();
  });

  const prepared = async (on: Parameters<Database["rows"]>[1]) =>
    (await database.rows<{ statement: string }>(sql`SELECT statement FROM pg_prepared_statements`, on)).map((r) => r.statement);

  it("names the statements of a transaction, of a savepoint in it, and gives them the right values", async () => {
    const seen = await database.db.transaction(async (tx) => {
      const [row] = await database.rows<{ n: number }>(sql`SELECT ${41}::int + 1 AS n /* in-transaction */`, tx);
      expect(row?.n).toBe(42);
      const nested = await tx.transaction(async (inner) => {
        const [again] = await database.rows<{ s: string }>(sql`SELECT ${"save"} || 'point' AS s /* in-savepoint */`, inner);
        expect(again?.s).toBe("savepoint");
        return prepared(inner);
      });
      return [...nested, ...(await prepared(tx))];
    });
    expect(seen.some((s) => s.includes("/* in-transaction */"))).toBe(true);
    expect(seen.some((s) => s.includes("/* in-savepoint */"))).toBe(true);
  });

  it("runs a statement again by its name, and gives values outside a transaction right", async () => {
    for (let i = 0; i < 3; i++) {
      const [row] = await database.rows<{ n: number }>(sql`SELECT ${i}::int AS n /* outside */`);
      expect(row?.n).toBe(i);
    }
    const reused = await database.db.transaction(async (tx) => {
      await database.rows(sql`SELECT ${1}::int AS n /* twice */`, tx);
      await database.rows(sql`SELECT ${2}::int AS n /* twice */`, tx);
      return (await prepared(tx)).filter((s) => s.includes("/* twice */")).length;
    });
    expect(reused).toBe(1);
  });

  it("lets PostgreSQL settle a statement read by key on one plan for all values, after five planned for their own", async () => {
    const [mode] = await database.rows<{ plan_cache_mode: string }>(sql`SHOW plan_cache_mode`);
    expect(mode?.plan_cache_mode).toBe("auto");
    // One transaction pins one connection, whose pg_prepared_statements counts each statement's plans.
    const counted = await database.db.transaction(async (tx) => {
      for (let i = 0; i < 8; i++) {
        const [row] = await database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM plans WHERE id = ${randomUUID()} /* by-key */`, tx);
        expect(row?.n).toBe(0);
      }
      return database.rows<{ generic_plans: number | string; custom_plans: number | string }>(
        sql`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%/* by-key */%'`,
        tx,
      );
    });
    expect(counted).toHaveLength(1);
    expect(Number(counted[0]!.custom_plans)).toBe(5);
    expect(Number(counted[0]!.generic_plans)).toBe(3);
  });

  it("writes plan statuses into the statement's text, so a plan made for all values still knows which plans it reads", async () => {
    const text = (q: ReturnType<typeof sql>) => database.db.select({ one: sql`1` }).from(plans).where(q).toSQL();
    expect(text(statusIs("pending"))).toMatchObject({ sql: expect.stringContaining(`"plans"."status" = 'pending'`), params: [] });
    expect(text(statusIn(["pending", "approved"]))).toMatchObject({ sql: expect.stringContaining(`"plans"."status" IN ('pending', 'approved')`), params: [] });
    expect(() => statusIn(["pending", "applied'; DROP TABLE plans; --" as never])).toThrow(/not plan statuses: applied'; DROP TABLE plans; --/);
    expect(() => statusIn([])).toThrow(/at least one/);
    // However a filter is written, one text: order and repeats do not make new statements.
    expect(text(statusIn(["failed", "applied", "failed"])).sql).toBe(text(statusIn(["applied", "failed"])).sql);
    expect(text(statusIn(["failed", "failed"])).sql).toContain(`"plans"."status" = 'failed'`);
    // PostgreSQL takes the text as a status of its enum (a misspelt one would fail here).
    const [found] = await database.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM plans WHERE ${statusIn(["pending", "approved"])}`);
    expect(Number(found?.n)).toBe(0);
  });
});
