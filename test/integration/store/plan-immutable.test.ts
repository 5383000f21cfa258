import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";
import { mergeRequest } from "../../support/harness.ts";

describe.each(databaseKinds)("a stored plan never changes, on $name", (kind) => {
  const h = useHarness(kind);

  it.each([
    ["document", sql`document = replace(document, 'ana@new.example', 'evil@example.com')`],
    ["hash", sql`hash = 'sha256:' || repeat('0', 64)`],
    ["expires_at", sql`expires_at = expires_at + interval '1 day'`],
    ["preview", sql`preview = '{}'`],
    ["created_at", sql`created_at = created_at - interval '1 day'`],
    ["request_digest", sql`request_digest = 'sha256:forged'`],
  ])("refuses an UPDATE of %s", async (_column, assignment) => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    await expect(h.database.db.execute(sql`UPDATE plans SET ${assignment} WHERE id = ${plan.id}`)).rejects.toThrow();
    const [row] = await h.database.rows<{ hash: string }>(sql`SELECT hash FROM plans WHERE id = ${plan.id}`);
    expect(row!.hash).toBe(plan.hash);
  });

  it("still lets the lifecycle move", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    await h.database.db.execute(sql`UPDATE plans SET status = 'cancelled', updated_at = now() WHERE id = ${plan.id}`);
    const [row] = await h.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`);
    expect(row!.status).toBe("cancelled");
  });
});
