import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRowTargetConfig } from "../../../src/config/schema.ts";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { editForm, editPlan } from "../../../src/service/edit/index.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { openRowDatabase, type RowDatabase } from "../../support/adapters-postgres.ts";
import { pglite } from "../../support/databases.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { testGrantKeys, withTargets } from "../../support/harness.ts";
import { refusal } from "../../support/refusal.ts";
import { useHarness } from "../../support/use-harness.ts";

const adminUrl = process.env.TEST_DATABASE_URL;

/**
 * Edit before approve on a postgres.row target: Countersign's store on PGlite, the target a
 * database with a read-only and a writing role on the local PostgreSQL server.
 */
describe.skipIf(!adminUrl)("edit before approve on a postgres.row target", () => {
  const h = useHarness(pglite, { sinks: ["test"] });
  let db: RowDatabase;
  let ctx: ServiceContext & { close(): Promise<void> };
  let target: PostgresRowTargetConfig;

  beforeAll(async () => {
    db = await openRowDatabase(adminUrl!);
    target = PostgresRowTargetConfig.parse({
      adapter: "postgres.row",
      read: { url: db.readUrl },
      write: { url: db.writeUrl },
      tables: { contacts: { key: ["id"], version: "updated_at" } },
      allow: { ops: ["update", "insert", "delete"], tables: ["contacts"] },
      watch: { intervalSeconds: 0 },
    });
    ctx = withTargets(h.ctx, { crmdb: target });
  });
  afterAll(async () => {
    await ctx?.close();
    await db?.close();
  });

  it("a row's columns are its values: edited, previewed again through the adapter, applied once by someone else's approval", async () => {
    await db.admin`INSERT INTO contacts (id, name, email, score) VALUES (201, 'Dora', 'dora@old.example', 1.50)`;
    const { plan } = await submitPlan(ctx, {
      agent: h.agent,
      request: {
        title: "Fix Dora",
        onBehalfOf: "U0REQUESTER",
        actions: [
          { kind: "postgres.row", target: "crmdb", table: "contacts", key: { id: 201 }, op: "update", values: { email: "dora@agent.example", score: "2.50" } },
        ],
      },
    });
    const form = await editForm(ctx, { planId: plan.id, hash: plan.hash, person: { userId: "U0BOB", via: "web" } });
    expect(form.fields.map((f) => [f.key, f.text])).toEqual([
      ["0:/email", '"dora@agent.example"'],
      ["0:/score", '"2.50"'],
    ]);
    // A column the database refuses in that form is the adapter's refusal, naming it.
    const bad = await refusal(editPlan(ctx, { planId: plan.id, hash: plan.hash, person: { userId: "U0BOB", via: "web" }, values: { "0:/score": '"lots"' } }));
    expect(bad.code).toBe("preview_failed");
    expect(bad.message).toContain("score");

    const { plan: next } = await editPlan(ctx, {
      planId: plan.id,
      hash: plan.hash,
      person: { userId: "U0BOB", via: "web" },
      values: { "0:/email": '"dora@reviewer.example"', "0:/score": '"3.25"' },
    });
    expect(next.plan.actions[0]).toMatchObject({ op: "update", key: { id: 201 }, values: { email: "dora@reviewer.example", score: "3.25" } });
    expect((await refusal(decide(ctx, { planId: next.id, hash: next.hash, actor: { userId: "U0BOB", via: "web" }, verdict: "approve" }))).code).toBe(
      "self_approval",
    );
    expect((await decide(ctx, { planId: next.id, hash: next.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" })).status).toBe("approved");

    let claim = (await claimApproved(ctx))!;
    while (claim.plan.id !== next.id) claim = (await claimApproved(ctx))!;
    const writes = await db.writes();
    const ports = executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), { crmdb: target }, h.clock.now);
    try {
      const outcome = await executePlan(claim, ports);
      expect(outcome).toMatchObject({ status: "applied", actions: [{ verified: true }] });
      expect(await reportOutcome(ctx, { claimToken: claim.claimToken, outcome })).toEqual({ status: "applied" });
    } finally {
      await ports.close();
    }
    expect(await db.writes()).toBe(writes + 1);
    const [row] = await db.admin`SELECT email, score::text AS score FROM contacts WHERE id = 201`;
    expect(row).toEqual({ email: "dora@reviewer.example", score: "3.25" });
  });
});
