import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitPlan } from "../../src/service/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { databaseKinds } from "../support/databases.ts";
import { mergeRequest, openHarness, type Harness } from "../support/harness.ts";

describe.each(databaseKinds)("a stored plan never changes, on $name", (kind) => {
  let database: Database;
  let h: Harness;
  beforeAll(async () => {
    database = await kind.open();
    h = await openHarness(database);
  });
  afterAll(async () => {
    await h?.close();
    await database?.close();
  });

  it.each([
    ["document", sql`document = replace(document, 'ana@new.example', 'evil@example.com')`],
    ["hash", sql`hash = 'sha256:' || repeat('0', 64)`],
    ["expires_at", sql`expires_at = expires_at + interval '1 day'`],
    ["preview", sql`preview = '{}'`],
    ["created_at", sql`created_at = created_at - interval '1 day'`],
    ["request_digest", sql`request_digest = 'sha256:forged'`],
  ])("refuses an UPDATE of %s", async (_column, assignment) => {
    const { plan } = await submitPlan(h.ctx, h.agent, mergeRequest());
    await expect(database.db.execute(sql`UPDATE plans SET ${assignment} WHERE id = ${plan.id}`)).rejects.toThrow();
    const [row] = await database.rows<{ hash: string }>(sql`SELECT hash FROM plans WHERE id = ${plan.id}`);
    expect(row!.hash).toBe(plan.hash);
  });

  it("still lets the lifecycle move", async () => {
    const { plan } = await submitPlan(h.ctx, h.agent, mergeRequest());
    await database.db.execute(sql`UPDATE plans SET status = 'cancelled', updated_at = now() WHERE id = ${plan.id}`);
    const [row] = await database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`);
    expect(row!.status).toBe("cancelled");
  });
});
