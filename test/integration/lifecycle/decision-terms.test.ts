import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { decisionTermsOf, decisionTermsOfPlans, plannedActionsOf } from "../../../src/service/lifecycle/decision-terms.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { openDatabase } from "../../../src/store/db.ts";
import { postgresKind } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/**
 * A plan's terms and actions are remembered by the process that stored it; another process (a
 * second replica) reads them from the plan's row the first time, and gets the same.
 */
describe.skipIf(!postgresKind)("decision terms remembered, or read by another replica", () => {
  const h = useHarness(postgresKind!);

  it("a replica that did not store the plan reads the same terms and actions from its row; an unknown plan has none", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "terms read elsewhere" }) });
    const db = (await h.database.rows<{ db: string }>(sql.raw("SELECT current_database() AS db")))[0]!.db;
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${db}`;
    const other = await openDatabase({ kind: "postgres", url: url.toString() });
    try {
      const here = { terms: await decisionTermsOf(h.database, plan.id), actions: await plannedActionsOf(h.database, plan.id) };
      const there = { actions: await plannedActionsOf(other, plan.id), terms: await decisionTermsOf(other, plan.id) };
      expect(there).toStrictEqual(here);
      expect(there.terms).toMatchObject({ hash: plan.hash, expiresAt: new Date(plan.expiresAt) });
      expect(there.actions?.map((a) => a.target)).toStrictEqual(["crm"]);
      const unknown = "00000000-0000-4000-8000-000000000000";
      expect(await plannedActionsOf(other, unknown)).toBeUndefined();
      expect(await decisionTermsOf(other, unknown)).toBeUndefined();
    } finally {
      await other.close();
    }
  });
  it("terms of several plans at once: remembered here, read in one statement by another replica, the same; unknown plans left out", async () => {
    const stored = [];
    for (let i = 0; i < 3; i++) stored.push((await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `terms ${i}` }) })).plan);
    const unknown = "00000000-0000-4000-8000-000000000001";
    const ids = [stored[2]!.id, unknown, stored[0]!.id, stored[1]!.id, stored[0]!.id];
    const db = (await h.database.rows<{ db: string }>(sql.raw("SELECT current_database() AS db")))[0]!.db;
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${db}`;
    const other = await openDatabase({ kind: "postgres", url: url.toString() });
    try {
      const here = await decisionTermsOfPlans(h.database, ids);
      const there = await decisionTermsOfPlans(other, ids);
      expect([...there.keys()].sort()).toStrictEqual(stored.map((p) => p.id).sort());
      for (const plan of stored) {
        expect(there.get(plan.id)).toStrictEqual(here.get(plan.id));
        expect(there.get(plan.id)).toMatchObject({ hash: plan.hash, expiresAt: new Date(plan.expiresAt) });
      }
      // Read once, then remembered by that replica too.
      expect(await decisionTermsOf(other, stored[1]!.id)).toBe(there.get(stored[1]!.id));
    } finally {
      await other.close();
    }
  });
});
