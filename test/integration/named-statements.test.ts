import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/store/db.ts";
import { openThrowawayPostgres } from "../support/databases.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL;

/**
 * The PostgreSQL database sends drizzle's statements as named ones (store/named-statements.ts):
 * one round trip each, where an unnamed statement with parameters took two. A named statement is
 * listed in its connection's pg_prepared_statements, an unnamed one never is; reading the list in
 * the same transaction pins the connection. Each execution is still planned for its own values.
 */
describe.skipIf(!testDatabaseUrl)("named statements on postgres", () => {
  let database: Database;
  beforeAll(async () => {
    database = await openThrowawayPostgres(testDatabaseUrl!);
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

  it("plans every execution for its own parameter values, as unnamed statements were", async () => {
    const [row] = await database.rows<{ plan_cache_mode: string }>(sql`SHOW plan_cache_mode`);
    expect(row?.plan_cache_mode).toBe("force_custom_plan");
  });
});
