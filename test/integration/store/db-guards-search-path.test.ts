import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { decide } from "../../../src/service/decide/decide.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds, openThrowawayPostgres, type TestDatabaseKind } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** What every guard and SECURITY DEFINER function runs with (migrations/0001_guards.sql): only the catalog, then temporary tables. */
const PINNED = "search_path=pg_catalog, pg_temp";

/**
 * The guards must not take their meaning from the caller. A trigger function runs with the
 * search_path of whoever fired it, and a SECURITY DEFINER function with its own but as its owner:
 * a function or operator the caller may put on either path changes what the guard checks, or runs
 * with the owner's rights. Every such function pins search_path, and this lists them from the
 * catalog, so one added later without it fails here.
 */
describe.each(databaseKinds)("guard functions pin their search_path on $name", (kind) => {
  const h = useHarness(kind);

  it("every function a trigger runs, and every SECURITY DEFINER function, has search_path = pg_catalog, pg_temp", async () => {
    const functions = await h.database.rows<{ name: string; config: string[] | null }>(sql`
      SELECT p.oid::regprocedure::text AS name, p.proconfig AS config
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'public'
         AND (p.prosecdef OR p.oid IN (SELECT tgfoid FROM pg_trigger WHERE NOT tgisinternal))
       ORDER BY 1`);
    // The list is read, not written down: these must be in it, or the query found nothing to check.
    expect(functions.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        "countersign_append_only()",
        "countersign_audit_pruned_guard()",
        "countersign_count_admission()",
        "countersign_plans_document_fixed()",
        "countersign_plans_immutable()",
        "countersign_purge_plans(timestamp with time zone,text)",
      ]),
    );
    const unpinned = functions.filter((f) => !(f.config ?? []).includes(PINNED)).map((f) => `${f.name}: ${JSON.stringify(f.config)}`);
    expect(unpinned).toEqual([]);
  });

  it("plans have no row trigger before UPDATE but the two guards: plans_document_fixed fires only on an UPDATE that names the document or preview, so a trigger that changed them would go unseen", async () => {
    // tgtype: 1 = row, 2 = before, 16 = update (pg_trigger.h).
    const triggers = await h.database.rows<{ name: string; columns: string | null }>(sql`
      SELECT t.tgname AS name, (SELECT string_agg(a.attname, ',' ORDER BY a.attname) FROM pg_attribute a WHERE a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr::int2[])) AS columns
        FROM pg_trigger t
       WHERE t.tgrelid = 'public.plans'::regclass AND NOT t.tgisinternal AND t.tgtype & 1 = 1 AND t.tgtype & 2 = 2 AND t.tgtype & 16 = 16
       ORDER BY 1`);
    expect(triggers).toEqual([
      { name: "plans_document_fixed", columns: "document,preview" },
      { name: "plans_immutable", columns: null },
    ]);
  });
});

/**
 * Two attacks on the guards through the search path, by a role with the app's table and
 * function grants that may create objects in public (every role, before PostgreSQL 15) and in a
 * schema of its own. It connects as itself on a connection of its own, so no plan cached by
 * another session hides what it does.
 */
const testDatabaseUrl = process.env.TEST_DATABASE_URL;
let databaseUrl = "";
/** As databases.ts's postgresKind, keeping the database's URL for the role's own connection. */
const postgresWithUrl: TestDatabaseKind | undefined = testDatabaseUrl
  ? {
      name: "postgres",
      async open() {
        const database = await openThrowawayPostgres(testDatabaseUrl, { template: inject("postgresTemplate") });
        await database.migrate();
        databaseUrl = database.url;
        return database;
      },
    }
  : undefined;

describe.runIf(postgresWithUrl)("a role with the app's grants cannot bend the guards (PostgreSQL)", () => {
  const h = useHarness(postgresWithUrl!);
  const role = `cs_mallory_${randomBytes(4).toString("hex")}`;
  let mallory: postgres.Sql;

  beforeAll(async () => {
    for (const statement of [
      `CREATE ROLE ${role} LOGIN`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
      `GRANT EXECUTE ON FUNCTION countersign_purge_plans(timestamptz, text) TO ${role}`,
      `GRANT CREATE ON SCHEMA public TO ${role}`,
      `CREATE SCHEMA ${role} AUTHORIZATION ${role}`,
    ])
      await h.database.rows(sql.raw(statement));
    const url = new URL(databaseUrl);
    url.username = role;
    url.password = "";
    mallory = postgres(url.toString(), { max: 1, onnotice: () => {} });
  });

  afterAll(async () => {
    await mallory?.end({ timeout: 5 });
    // Roles belong to the server, not the test's database: drop what it owns there, then the role.
    await h.database.rows(sql.raw(`DROP OWNED BY ${role} CASCADE`));
    await h.database.rows(sql.raw(`DROP ROLE ${role}`));
  });

  const refusalOf = (work: Promise<unknown>) =>
    work.then(
      () => "accepted",
      (err: Error) => err.message,
    );
  const count = async (table: "audit_events" | "decisions", planId: string) =>
    Number((await h.database.rows<{ n: string }>(sql`SELECT count(*) AS n FROM ${sql.identifier(table)} WHERE plan_id = ${planId}`))[0]!.n);

  async function approvedPlan(title: string) {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title }) });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    return plan;
  }

  it("its own public.cardinality(uuid[]) is not what countersign_purge_plans() calls, so it never runs as the owner with the purge flag", async () => {
    const victim = await approvedPlan("its history must stay");
    const events = await count("audit_events", victim.id);
    expect(events).toBeGreaterThanOrEqual(2);
    // An exact-type match in a schema on the function's path is preferred to pg_catalog's cardinality(anyarray).
    await mallory.unsafe(`
      CREATE FUNCTION public.cardinality(uuid[]) RETURNS integer LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM set_config('countersign.purge', 'on', true);
        DELETE FROM public.decisions WHERE plan_id = '${victim.id}';
        DELETE FROM public.audit_events WHERE plan_id = '${victim.id}';
        RETURN 0;
      END $$`);
    const [purged] = await mallory`SELECT countersign_purge_plans(now() - interval '1 minute', 'routine') AS n`;
    expect(purged!.n).toBe(0);
    expect(await count("audit_events", victim.id)).toBe(events);
    expect(await count("decisions", victim.id)).toBe(1);
    // The function is there and does what it says when called by name, as its maker: the guards refuse it then.
    expect(await refusalOf(mallory`SELECT public.cardinality(ARRAY[]::uuid[])`)).toMatch(
      new RegExp(`^decisions: DELETE refused: countersign\\.purge opens the append-only guards only inside countersign_purge_plans\\(\\), .* not for ${role}`),
    );
  });

  it("its own jsonb - text[] operator, first on its search_path, does not let an approved plan's document change", async () => {
    const victim = await approvedPlan("signed as it is");
    const [before] = await h.database.rows<{ document: string; hash: string }>(sql`SELECT document, hash FROM plans WHERE id = ${victim.id}`);
    // With this operator the immutability check compares two empty objects and finds no change.
    await mallory.unsafe(`
      CREATE FUNCTION ${role}.nothing_left(jsonb, text[]) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$ SELECT '{}'::jsonb $$;
      CREATE OPERATOR ${role}.- (LEFTARG = jsonb, RIGHTARG = text[], FUNCTION = ${role}.nothing_left)`);
    const said = await refusalOf(
      mallory.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL search_path = ${role}, pg_catalog`);
        // The operator is in reach of this session: the attack is set up as the reviewer had it.
        expect((await tx`SELECT '{"a":1}'::jsonb - ARRAY['b'] AS left`)[0]!.left).toEqual({});
        await tx`UPDATE public.plans SET document = replace(document, 'ana@new.example', 'evil@example.com') WHERE id = ${victim.id}`;
      }),
    );
    expect(said).toMatch(new RegExp(`plan ${victim.id} is immutable: .*refused a change to document;`));
    const [after] = await h.database.rows<{ document: string; hash: string }>(sql`SELECT document, hash FROM plans WHERE id = ${victim.id}`);
    expect(after).toEqual(before);
    expect(before!.document).toContain("ana@new.example");
  });
});
