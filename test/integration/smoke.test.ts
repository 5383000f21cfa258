import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decide } from "../../src/service/decide.ts";
import { submitPlan } from "../../src/service/submit-plan.ts";
import type { Database } from "../../src/store/db.ts";
import { databaseKinds } from "../support/databases.ts";
import { mergeRequest, openHarness, type Harness } from "../support/harness.ts";

describe.each(databaseKinds)("smoke on $name", (kind) => {
  let database: Database;
  let h: Harness;
  beforeAll(async () => {
    database = await kind.open();
    h = await openHarness(database);
  });
  afterAll(async () => {
    await h.close();
    await database.close();
  });

  it("submits and approves", async () => {
    const { plan } = await submitPlan(h.ctx, h.agent, mergeRequest());
    expect(plan.status).toBe("pending");
    const result = await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    expect(result.status).toBe("approved");
  });
});
