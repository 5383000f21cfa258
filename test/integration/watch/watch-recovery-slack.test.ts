import { and, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { watchTargets } from "../../../src/service/watch/watch-targets.ts";
import { outbox, targetWatches } from "../../../src/store/schema.ts";
import { databaseKinds } from "../../support/databases.ts";
import { mergeRequest, targetConfig } from "../../support/harness.ts";
import { useHarness } from "../../support/use-harness.ts";

const INTERVAL = 10;

/**
 * A good read after failing ones (watch-targets.ts checkResource): its one UPDATE clears the
 * failure and tells, from the row as it was, that the run of failures ended, so reviewers' Slack
 * messages are re-rendered (a `plan.watch` row) then, and only then: good reads in a row queue
 * nothing.
 */
describe.each(databaseKinds)("a watch recovering on $name", (kind) => {
  const h = useHarness(kind, { targets: (url) => ({ crm: targetConfig(url, { watch: { intervalSeconds: INTERVAL } }) }), sinks: ["slack"] });
  const watchRows = (planId: string) =>
    h.database.db
      .select({ id: outbox.id })
      .from(outbox)
      .where(and(eq(outbox.planId, planId), sql`${outbox.payload}::json->>'type' = 'plan.watch'`));

  it("the failing read and the good read after it each queue a Slack re-render; good reads after that queue none", async () => {
    h.target.set("/contacts/21", { id: 21, name: "Uma", email: "uma@old.example" });
    const { plan } = await submitPlan(h.ctx, {
      agent: h.agent,
      request: mergeRequest({ actions: [{ kind: "http.json", target: "crm", path: "/contacts/21", op: "merge", body: { email: "uma@new.example" } }] }),
    });
    await watchTargets(h.ctx, { replica: "r1" });
    h.clock.advance(INTERVAL);
    await watchTargets(h.ctx, { replica: "r1" });
    expect(await watchRows(plan.id)).toHaveLength(0);

    h.target.failWith = { status: 503, body: "down" };
    try {
      h.clock.advance(INTERVAL);
      expect((await watchTargets(h.ctx, { replica: "r1" })).failed).toBe(1);
    } finally {
      h.target.failWith = undefined;
    }
    expect(await watchRows(plan.id)).toHaveLength(1);

    h.clock.advance(INTERVAL);
    expect((await watchTargets(h.ctx, { replica: "r1" })).read).toBe(1);
    expect(await watchRows(plan.id)).toHaveLength(2);
    const [row] = await h.database.db.select().from(targetWatches).where(eq(targetWatches.path, "/contacts/21"));
    expect(row).toMatchObject({ failedSince: null, lastError: null, leasedBy: null, checkedAt: h.clock.now() });

    h.clock.advance(INTERVAL);
    expect((await watchTargets(h.ctx, { replica: "r1" })).read).toBe(1);
    expect(await watchRows(plan.id)).toHaveLength(2);
  });
});
