import { sql, type SQL } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decide } from "../../src/service/decide.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import { verifyAudit } from "../../src/service/verify-audit.ts";
import type { Database } from "../../src/store/db.ts";
import { databaseKinds } from "../support/databases.ts";
import { mergeRequest, openHarness, type Harness } from "../support/harness.ts";

/** Scenario 34: an audit row edited, or the tail deleted, is found and located. */
describe.each(databaseKinds)("audit verify on $name", (kind) => {
  let database: Database;
  let h: Harness;
  let ids: number[];
  beforeEach(async () => {
    database = await kind.open();
    h = await openHarness(database);
    for (let i = 0; i < 3; i++) {
      const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `audited ${i}` }) });
      await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    }
    ids = (await database.rows<{ id: number | string }>(sql`SELECT id FROM audit_events ORDER BY id`)).map((r) => Number(r.id));
  });
  afterEach(async () => {
    await h?.close();
    await database?.close();
  });

  /** The database refuses edits to the log; a table owner who switches the guard off is what verify catches. */
  async function tamper(statement: SQL): Promise<void> {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only`);
      await tx.execute(statement);
      await tx.execute(sql`ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only`);
    });
  }

  it("an untouched log verifies", async () => {
    expect(await verifyAudit(h.ctx)).toEqual({ ok: true, events: ids.length });
  });

  it("an edited row is named", async () => {
    const victim = ids[4]!;
    await tamper(sql`UPDATE audit_events SET data = '{"approvers":["U0MALLORY"]}' WHERE id = ${victim}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: false, problem: { at: victim, message: expect.stringContaining("edited") } });
  });

  it("a row deleted from the middle breaks the next link", async () => {
    await tamper(sql`DELETE FROM audit_events WHERE id = ${ids[2]!}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: false, problem: { at: ids[3], message: expect.stringContaining("deleted or changed") } });
  });

  it("a deleted tail is found against the recorded head", async () => {
    await tamper(sql`DELETE FROM audit_events WHERE id >= ${ids.at(-2)!}`);
    expect(await verifyAudit(h.ctx)).toMatchObject({ ok: false, problem: { at: "tail", message: expect.stringContaining("were deleted") } });
  });
});
