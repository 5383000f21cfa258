import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { editPlan } from "../../../src/service/edit/index.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import type { PlanView } from "../../../src/service/lifecycle/plan-view.ts";
import { plans } from "../../../src/store/schema.ts";
import { postgresKind } from "../../support/databases.ts";
import { mergeRequest } from "../../support/harness.ts";
import { holdPlanRows, lockWaiters } from "../../support/hold-plan-rows.ts";
import { useHarness, type HarnessView } from "../../support/use-harness.ts";
import { waitFor } from "../../support/wait-for.ts";

let seq = 0;
async function proposed(h: HarnessView): Promise<PlanView> {
  const n = 300 + ++seq;
  h.target.set(`/contacts/${n}`, { id: n, email: "ana@old.example" });
  const { plan } = await submitPlan(h.ctx, {
    agent: h.agent,
    request: mergeRequest({
      title: `raced plan ${n}`,
      actions: [{ kind: "http.json", target: "crm", path: `/contacts/${n}`, op: "merge", body: { email: "a@agent.example" } }],
    }),
  });
  return plan;
}

/** The outcomes of racing attempts: what won, and the code each loser was refused with. */
function settle(results: PromiseSettledResult<{ id: string }>[]): { won: string[]; refused: (string | undefined)[] } {
  const won = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.id] : []));
  const refused = results.flatMap((r) => {
    if (r.status === "fulfilled") return [];
    if (!(r.reason instanceof ServiceError)) throw r.reason;
    return [r.reason.code];
  });
  return { won, refused };
}

// Races need concurrent transactions: PGlite runs one at a time, so these run on PostgreSQL only.
describe.skipIf(!postgresKind)("edits racing each other and the agent's re-plan (postgres)", () => {
  const h = useHarness(postgresKind!);
  const versionsOf = async (planId: string) => h.database.db.select({ id: plans.id }).from(plans).where(eq(plans.supersedes, planId));

  /** Starts `attempts` while another connection holds the plan's row, and lets them go once all wait for it. */
  async function raced(plan: PlanView, attempts: (() => Promise<{ id: string }>)[]) {
    const held = await holdPlanRows(h.database, [plan.id]);
    const running = attempts.map((attempt) => attempt());
    try {
      await waitFor(`${attempts.length} writers waiting on the plan's row`, async () => (await lockWaiters(h.database)) >= attempts.length);
    } finally {
      await held.release();
    }
    return settle(await Promise.allSettled(running));
  }

  it("two people editing at once yield exactly one new version; the other is told it was replaced, naming the newer version", async () => {
    const plan = await proposed(h);
    const editBy = (userId: string, email: string) => async () =>
      (await editPlan(h.ctx, { planId: plan.id, hash: plan.hash, person: { userId, via: "web" }, values: { "0:/email": JSON.stringify(email) } })).plan;
    const { won, refused } = await raced(plan, [editBy("U0BOB", "bob@fix.example"), editBy("U0CAROL", "carol@fix.example")]);
    expect(won).toHaveLength(1);
    expect(refused).toEqual(["hash_mismatch"]);
    expect((await versionsOf(plan.id)).map((v) => v.id)).toEqual(won);
    const [old] = await h.database.db.select().from(plans).where(eq(plans.id, plan.id));
    expect(old).toMatchObject({ status: "superseded", supersededBy: won[0] });
  });

  it("an edit racing the agent's own re-plan: exactly one new version, whichever came first", async () => {
    const plan = await proposed(h);
    const { won, refused } = await raced(plan, [
      async () =>
        (await editPlan(h.ctx, { planId: plan.id, hash: plan.hash, person: { userId: "U0BOB", via: "slack" }, values: { "0:/email": '"bob@fix.example"' } }))
          .plan,
      async () =>
        (
          await submitPlan(h.ctx, {
            agent: h.agent,
            request: mergeRequest({
              title: "the agent's own re-plan",
              supersedes: plan.id,
              actions: [{ kind: "http.json", target: "crm", path: plan.plan.actions[0]!.path, op: "merge", body: { email: "a@replan.example" } }],
            }),
          })
        ).plan,
    ]);
    expect(won).toHaveLength(1);
    // The loser is the edit (told the plan was replaced) or the re-plan (told it was superseded already).
    expect(refused).toHaveLength(1);
    expect(["hash_mismatch", "not_supersedable"]).toContain(refused[0]);
    expect((await versionsOf(plan.id)).map((v) => v.id)).toEqual(won);
  });
});
