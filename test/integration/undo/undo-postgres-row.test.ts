import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRowTargetConfig } from "../../../src/config/schema.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { proposeUndo } from "../../../src/service/undo/index.ts";
import { openRowDatabase, type RowDatabase } from "../../support/adapters-postgres.ts";
import { pglite } from "../../support/databases.ts";
import { withTargets } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";
import { approveAndApply, refusal } from "./undo-setup.ts";

const adminUrl = process.env.TEST_DATABASE_URL;

/**
 * Undo on a postgres.row target: Countersign's own store on PGlite, the target a database with a
 * read-only and a writing role on the local PostgreSQL server (test/support/adapters-postgres.ts).
 */
describe.skipIf(!adminUrl)("undo after apply on a postgres.row target", () => {
  const h = useHarness(pglite, { sinks: ["test"] });
  let db: RowDatabase;
  let ctx: ServiceContext & { close(): Promise<void> };
  let targets: Record<string, PostgresRowTargetConfig>;

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    await db.admin.unsafe(`CREATE TABLE gen_rows (id int4 PRIMARY KEY, a int4, doubled int4 GENERATED ALWAYS AS (a * 2) STORED)`);
    for (const [url, grant] of [
      [db.readUrl, "SELECT"],
      [db.writeUrl, "SELECT, INSERT, UPDATE, DELETE"],
    ] as const)
      await db.admin.unsafe(`GRANT ${grant} ON gen_rows TO ${new URL(url).username}`);
    const target = (url: string) =>
      PostgresRowTargetConfig.parse({
        adapter: "postgres.row",
        read: { url: db.readUrl },
        write: { url },
        tables: { contacts: { key: ["id"], version: "updated_at" }, gen_rows: { key: ["id"] } },
        allow: { ops: ["update", "insert", "delete"], tables: ["contacts", "gen_rows"] },
        watch: { intervalSeconds: 0 },
      });
    targets = { crmdb: target(db.writeUrl) };
    ctx = withTargets(h.ctx, { crmdb: target(db.writeUrl) });
  });
  afterAll(async () => {
    await ctx?.close();
    await db?.close();
  });

  const row = async (table: string, id: number) =>
    (await db.admin.unsafe<Record<string, unknown>[]>(`SELECT id, name, email, active FROM ${table} WHERE id = $1`, [id]))[0];

  it("takes back an insert, an update and a delete: every row as it was before, verified", async () => {
    await db.admin`INSERT INTO contacts (id, name, email) VALUES (102, 'Bea', 'bea@old.example'), (103, 'Cid', 'cid@example.com')`;
    const { plan } = await submitPlan(ctx, {
      agent: h.agent,
      request: {
        title: "Row changes",
        actions: [
          { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 101 }, op: "insert", values: { name: "Ada" } },
          { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 102 }, op: "update", values: { email: "bea@new.example" } },
          { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 103 }, op: "delete" },
        ],
      },
    });
    expect((await approveAndApply(ctx, plan, targets)).status).toBe("applied");
    expect(await row("contacts", 101)).toBeDefined();
    expect(await row("contacts", 103)).toBeUndefined();

    const { plan: undo } = await proposeUndo(ctx, { planId: plan.id, asker: { person: { userId: "U0CAROL", via: "web" } } });
    expect(undo.plan.actions.map((a) => [a.op, a.path])).toEqual([
      ["insert", "/contacts/103"],
      ["update", "/contacts/102"],
      ["delete", "/contacts/101"],
    ]);
    const outcome = await approveAndApply(ctx, undo, targets, "U0BOB");
    expect(outcome).toMatchObject({ status: "applied", actions: [{ verified: true }, { verified: true }, { verified: true }] });
    expect(await row("contacts", 101)).toBeUndefined();
    expect(await row("contacts", 102)).toEqual({ id: 102, name: "Bea", email: "bea@old.example", active: true });
    expect(await row("contacts", 103)).toEqual({ id: 103, name: "Cid", email: "cid@example.com", active: true });
  });

  it("refuses an undo whose row someone changed since, naming the column; nothing is written", async () => {
    await db.admin`INSERT INTO contacts (id, name, email) VALUES (104, 'Dan', 'dan@old.example')`;
    const { plan } = await submitPlan(ctx, {
      agent: h.agent,
      request: {
        title: "Dan's email",
        actions: [{ kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 104 }, op: "update", values: { email: "dan@new.example" } }],
      },
    });
    await approveAndApply(ctx, plan, targets);
    await db.admin`UPDATE contacts SET email = 'dan@other.example' WHERE id = 104`;
    const writes = await db.writes();
    const err = await refusal(proposeUndo(ctx, { planId: plan.id, asker: { agent: h.agent } }));
    expect(err).toMatchObject({ code: "undo_target_changed", details: { actions: [{ fields: [{ path: "/email", actual: "dan@other.example" }] }] } });
    expect(await db.writes()).toBe(writes);
  });

  it("names the column the database sets when a deleted row cannot be inserted again", async () => {
    await db.admin`INSERT INTO gen_rows (id, a) VALUES (1, 21)`;
    const { plan } = await submitPlan(ctx, {
      agent: h.agent,
      request: { title: "Drop a row", actions: [{ kind: "postgres.row", target: "crmdb", table: "gen_rows", key: { id: 1 }, op: "delete" }] },
    });
    await approveAndApply(ctx, plan, targets);
    const err = await refusal(proposeUndo(ctx, { planId: plan.id, asker: { agent: h.agent } }));
    expect(err.code).toBe("undo_refused");
    expect(err.message).toMatch(/undoing action 1 \(crmdb \/gen_rows\/1\): .*column 'doubled' of 'gen_rows' is set by the database/);
    // Nothing was proposed; the plan can be asked again once the table allows it.
    expect((await refusal(decide(ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" }))).code).toBe(
      "already_decided",
    );
  });
});
