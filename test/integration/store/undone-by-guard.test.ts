import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

/** The immutability guard on the two undo columns: `undoes` is fixed from the insert, `undone_by` may be set once. */
describe.each(databaseKinds)("the undo columns under the plans guard ($name)", (kind) => {
  const h = useHarness(kind);
  const refusal = (statement: ReturnType<typeof sql>) =>
    h.database.db.execute(statement).then(
      () => "not refused",
      (err: Error) => (err.cause instanceof Error ? err.cause.message : err.message),
    );
  const undoneBy = async (id: string) => (await h.database.rows<{ undone_by: string | null }>(sql`SELECT undone_by FROM plans WHERE id = ${id}`))[0]!.undone_by;

  it("sets undone_by once; a second value, or clearing it, is refused", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    const first = randomUUID();
    await h.database.db.execute(sql`UPDATE plans SET undone_by = ${first} WHERE id = ${plan.id}`);
    expect(await undoneBy(plan.id)).toBe(first);
    expect(await refusal(sql`UPDATE plans SET undone_by = ${randomUUID()} WHERE id = ${plan.id}`)).toMatch(
      new RegExp(`plan ${plan.id}: it was undone by ${first}, which is fixed`),
    );
    expect(await refusal(sql`UPDATE plans SET undone_by = NULL WHERE id = ${plan.id}`)).toMatch(/which is fixed/);
    expect(await undoneBy(plan.id)).toBe(first);
  });

  it("keeps undoes as it was stored", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    expect(await refusal(sql`UPDATE plans SET undoes = ${randomUUID()} WHERE id = ${plan.id}`)).toMatch(
      new RegExp(`plan ${plan.id} is immutable: .*refused a change to undoes;`),
    );
  });
});
