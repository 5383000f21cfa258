import { sql, type SQL } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelPlan } from "../../../src/service/intake/cancel-plan.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { heartbeatClaim } from "../../../src/service/execution/heartbeat-claim.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { verifyAudit } from "../../../src/service/audit/verify-audit.ts";
import { databaseKinds } from "../../support/databases.ts";
import { useHarness } from "../../support/use-harness.ts";
import { mergeRequest } from "../../support/harness.ts";

/** The database's own guards: append-only tables, an allowlist of plan columns that may move, one way to delete. */
describe.each(databaseKinds)("database guards on $name", (kind) => {
  const h = useHarness(kind, { sinks: ["slack.post"] });

  const run = (statement: SQL) => h.database.db.execute(statement);
  /** What the database said: drizzle wraps it as the `cause` of its "Failed query" error. */
  const refusal = (work: Promise<unknown>) =>
    work.then(
      () => {
        throw new Error("the statement was not refused");
      },
      (err: Error) => (err.cause instanceof Error ? err.cause.message : err.message),
    );
  const count = async (statement: SQL) => Number((await h.database.rows<{ n: number | string }>(statement))[0]!.n);

  async function approvedPlan() {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `guarded ${Math.random()}` }) });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "web" }, verdict: "approve" });
    return plan;
  }

  async function rejectedPlan() {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: `turned down ${Math.random()}` }) });
    await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0BOB", via: "slack" }, verdict: "reject", reason: "not today" });
    return plan;
  }

  describe.each([
    ["decisions", sql`UPDATE decisions SET user_id = 'U0MALLORY'`, sql`DELETE FROM decisions`, sql`TRUNCATE decisions`],
    ["audit_events", sql`UPDATE audit_events SET data = '{}'`, sql`DELETE FROM audit_events`, sql`TRUNCATE audit_events`],
  ])("%s", (table, update, remove, truncate) => {
    it.each([
      ["UPDATE", update],
      ["DELETE", remove],
      ["TRUNCATE", truncate],
    ])("refuses %s, naming the table", async (op, statement) => {
      await approvedPlan();
      const before = await count(sql`SELECT count(*) AS n FROM ${sql.identifier(table)}`);
      expect(before).toBeGreaterThan(0);
      expect(await refusal(run(statement))).toMatch(new RegExp(`${table} is append-only: ${op} refused`));
      expect(await count(sql`SELECT count(*) AS n FROM ${sql.identifier(table)}`)).toBe(before);
    });
  });

  it.each([
    ["document", sql`document = replace(document, 'ana@new.example', 'evil@example.com')`],
    // The document and the preview are guarded by a trigger of their own (plans_document_fixed), on UPDATE OF them.
    ["preview", sql`preview = replace(preview, 'ana@new.example', 'evil@example.com')`],
    ["hash", sql`hash = 'sha256:' || repeat('0', 64)`],
    ["created_at", sql`created_at = created_at - interval '1 day'`],
    ["agent_id", sql`agent_id = gen_random_uuid()`],
    ["callback_url", sql`callback_url = 'https://evil.example/hook'`],
  ])("refuses an UPDATE of the plan's %s and names the column", async (column, assignment) => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    expect(await refusal(run(sql`UPDATE plans SET ${assignment} WHERE id = ${plan.id}`))).toMatch(
      new RegExp(`plan ${plan.id} is immutable: .*refused a change to ${column};`),
    );
    const [row] = await h.database.rows<{ hash: string; status: string }>(sql`SELECT hash, status FROM plans WHERE id = ${plan.id}`);
    expect(row).toEqual({ hash: plan.hash, status: "pending" });
  });

  it("refuses a change to a lifecycle column when it comes with a change to a fixed one", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    expect(await refusal(run(sql`UPDATE plans SET status = 'cancelled', preview = '{}' WHERE id = ${plan.id}`))).toMatch(/refused a change to preview;/);
    expect((await h.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]!.status).toBe("pending");
  });

  it("keeps a grant fixed once issued", async () => {
    const plan = await approvedPlan();
    expect(await refusal(run(sql`UPDATE plans SET grant_expires_at = grant_expires_at + interval '1 day' WHERE id = ${plan.id}`))).toMatch(
      /grant is fixed once issued/,
    );
  });

  it("refuses DELETE and TRUNCATE of plans", async () => {
    const plan = await rejectedPlan();
    expect(await refusal(run(sql`DELETE FROM plans WHERE id = ${plan.id}`))).toMatch(/DELETE of plan .* refused/);
    expect(await refusal(run(sql`TRUNCATE plans CASCADE`))).toMatch(/TRUNCATE refused/);
    expect(await count(sql`SELECT count(*) AS n FROM plans WHERE id = ${plan.id}`)).toBe(1);
  });

  it("moves every lifecycle column through the service verbs: approve, claim, heartbeat, report, reject, cancel", async () => {
    const approved = await approvedPlan();
    // Earlier tests left approved plans too: take them all through to applied.
    for (let claim = await claimApproved(h.ctx); claim; claim = await claimApproved(h.ctx)) {
      await heartbeatClaim(h.ctx, { claimToken: claim.claimToken });
      await reportOutcome(h.ctx, {
        claimToken: claim.claimToken,
        outcome: {
          status: "applied",
          actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }],
        },
      });
    }
    const rejected = await rejectedPlan();
    const { plan: cancelled } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title: "cancelled" }) });
    await cancelPlan(h.ctx, { agent: h.agent, planId: cancelled.id });
    const statuses = await h.database.rows<{ id: string; status: string }>(
      sql`SELECT id, status FROM plans WHERE id IN (${approved.id}, ${rejected.id}, ${cancelled.id})`,
    );
    expect(Object.fromEntries(statuses.map((r) => [r.id, r.status]))).toMatchObject({
      [approved.id]: "applied",
      [rejected.id]: "rejected",
      [cancelled.id]: "cancelled",
    });
  });

  describe("countersign_purge_plans", () => {
    it("takes no plan whose audit events are not yet sealed and counted, and records nothing then (audit-prune.test.ts purges sealed ones)", async () => {
      const old = await rejectedPlan();
      const open = await approvedPlan();
      const cutoff = new Date(h.clock.now().getTime() + 1000);
      h.clock.advance(60);
      const auditBefore = await count(sql`SELECT count(*) AS n FROM audit_events`);
      const purgesBefore = await count(sql`SELECT count(*) AS n FROM purges`);

      // No sealer runs here: the old rejected plan's events are covered by no seal, so it stays whole.
      const [{ purged }] = (await h.database.rows<{ purged: number }>(
        sql`SELECT countersign_purge_plans(${cutoff.toISOString()}::timestamptz, 'retention: 30 days') AS purged`,
      )) as [{ purged: number }];
      expect(Number(purged)).toBe(0);
      expect(await count(sql`SELECT count(*) AS n FROM plans WHERE id IN (${old.id}, ${open.id})`)).toBe(2);
      expect(await count(sql`SELECT count(*) AS n FROM decisions WHERE plan_id IN (${old.id}, ${open.id})`)).toBe(2);
      expect(await count(sql`SELECT count(*) AS n FROM audit_events`)).toBe(auditBefore);
      expect(await count(sql`SELECT count(*) AS n FROM purges`)).toBe(purgesBefore);
      expect(await verifyAudit(h.ctx)).toMatchObject({ ok: true });
    });

    it("opens the guards for its own deletes only: later statements in the same transaction are refused", async () => {
      const survivor = await rejectedPlan();
      // A cutoff before the survivor was decided: the purge runs, and leaves it.
      const cutoff = new Date(h.clock.now().getTime() - 3_600_000).toISOString();
      expect(
        await refusal(
          h.database.db.transaction(async (tx) => {
            await tx.execute(sql`SELECT countersign_purge_plans(${cutoff}::timestamptz, 'tidy up')`);
            await tx.execute(sql`DELETE FROM decisions WHERE plan_id = ${survivor.id}`);
          }),
        ),
      ).toMatch(/decisions is append-only: DELETE refused/);
      expect(await count(sql`SELECT count(*) AS n FROM decisions WHERE plan_id = ${survivor.id}`)).toBe(1);
    });

    it("is not callable by a role that was not granted it", async () => {
      const role = `cs_guest_${Math.random().toString(36).slice(2, 10)}`;
      // Everything happens in a transaction that is rolled back: the role never outlives the test.
      const said = await refusal(
        h.database.db.transaction(async (tx) => {
          await tx.execute(sql.raw(`CREATE ROLE ${role}`));
          await tx.execute(sql.raw(`GRANT USAGE ON SCHEMA public TO ${role}`));
          await tx.execute(sql.raw(`SET LOCAL ROLE ${role}`));
          await tx.execute(sql`SELECT countersign_purge_plans(now() - interval '1 day', 'not mine to call')`);
        }),
      );
      expect(said).toMatch(/permission denied for function countersign_purge_plans/);
    });

    it.each([
      ["a cutoff in the future", sql`SELECT countersign_purge_plans(now() + interval '1 day', 'oops')`, /cutoff must be a moment in the past/],
      ["no cutoff", sql`SELECT countersign_purge_plans(NULL, 'oops')`, /cutoff must be a moment in the past, got NULL/],
      ["a blank reason", sql`SELECT countersign_purge_plans(now() - interval '1 day', '  ')`, /a reason is required/],
    ])("refuses %s", async (_what, statement, message) => {
      const purges = await count(sql`SELECT count(*) AS n FROM purges`);
      expect(await refusal(run(statement))).toMatch(message);
      expect(await count(sql`SELECT count(*) AS n FROM purges`)).toBe(purges);
    });
  });

  // Last: the added column stays on this file's h.database.
  it("a column added later is immutable until it is named as one that may change (fail closed)", async () => {
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest() });
    await run(sql`ALTER TABLE plans ADD COLUMN future_column text`);
    expect(await refusal(run(sql`UPDATE plans SET future_column = 'surprise' WHERE id = ${plan.id}`))).toMatch(/refused a change to future_column;/);
    // The lifecycle still moves with the new column in place.
    await cancelPlan(h.ctx, { agent: h.agent, planId: plan.id });
    expect((await h.database.rows<{ status: string }>(sql`SELECT status FROM plans WHERE id = ${plan.id}`))[0]!.status).toBe("cancelled");
  });
});
