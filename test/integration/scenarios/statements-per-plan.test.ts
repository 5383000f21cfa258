import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/plan/outcome.ts";
import { agentApi } from "../../../src/server/agent-api.ts";
import { addAgent } from "../../../src/service/agents/add-agent.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { submitPlan } from "../../../src/service/intake/submit-plan.ts";
import { openCountingPostgres, type CountingPostgres } from "../../support/counting-postgres.ts";
import { mergeRequest, openHarness, type Harness } from "../../support/harness.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL;

/** A plan event's statement (audit row, outbox rows, announcement; see recordPlanEvent), or the system chain's lock. */
const isAudit = (statement: string) => /audit_events|audit_head|pg_advisory_xact_lock/.test(statement);

/**
 * What one plan costs the database, statement by statement, from submit to the executor's
 * report: the per-statement overhead is much of the server's CPU at load. The bounds are
 * what each verb needs; a verb that grows a statement fails here, with the statements it sent.
 * (Submits with an idempotency key keep a transaction: BEGIN, INSERT … ON CONFLICT, event, COMMIT.)
 */
describe.skipIf(!testDatabaseUrl)("statements per plan on postgres", () => {
  let database: CountingPostgres;
  let h: Harness;
  beforeAll(async () => {
    database = await openCountingPostgres(testDatabaseUrl!);
    h = await openHarness(database, { sinks: ["slack"] });
  });
  afterAll(async () => {
    await h?.close();
    await database?.close();
  });

  const applied: Outcome = { status: "applied", actions: [{ index: 0, target: "crm", path: "/contacts/1", status: "applied" }] };

  /** One plan through every verb; the statements each sent. */
  async function onePlan(title: string): Promise<Record<"submit" | "approve" | "claim" | "report", string[]>> {
    database.take();
    const { plan } = await submitPlan(h.ctx, { agent: h.agent, request: mergeRequest({ title }) });
    const submit = database.take();
    expect((await decide(h.ctx, { planId: plan.id, hash: plan.hash, actor: { userId: "U0ALICE", via: "slack" }, verdict: "approve" })).status).toBe("approved");
    const approve = database.take();
    const claim = await claimApproved(h.ctx);
    expect(claim?.plan.id).toBe(plan.id);
    const claimed = database.take();
    expect(await reportOutcome(h.ctx, { claimToken: claim!.claimToken, outcome: applied })).toEqual({ status: "applied" });
    return { submit, approve, claim: claimed, report: database.take() };
  }

  it("submit, approve, claim and report each send no more statements than they need", async () => {
    await onePlan("warm-up: the driver's first queries on each connection are not the verbs'");
    const sent = await onePlan("counted");
    const count = Object.fromEntries(
      Object.entries(sent).map(([verb, statements]) => [verb, { all: statements.length, audit: statements.filter(isAudit).length }]),
    );
    console.log(`statements per plan (all, and of them plan events): ${JSON.stringify(count)}`);
    if (process.env.SHOW_STATEMENTS) console.log(JSON.stringify(sent, null, 1));
    // Outside the event statement: BEGIN, the verb's own writes (and, to decide, the plan's
    // lock; with this quorum of one, no votes to read; the vote itself goes in its event's
    // statement), COMMIT. Submit only reads the agent's
    // usage against its limits before any target read: a plan without an idempotency key is
    // stored in its event's statement, a transaction of its own (the INSERT's guard costs no
    // statement). Before its transaction an Approve reads only its targets: the plan's
    // fixed terms are remembered from the submit (a process that did not store the plan reads
    // them once, decision-terms.ts). Its transaction also sends `SET LOCAL plan_cache_mode` with
    // its first reads (db.ts, GENERIC_PLANS): no round trip, and its statements take generic plans
    // from their first execution on a connection instead of after five custom ones.
    const bound = { submit: 1, approve: 6, claim: 3, report: 3 } as const;
    for (const verb of Object.keys(bound) as (keyof typeof bound)[]) {
      const own = sent[verb].filter((s) => !isAudit(s));
      expect(own.length, `${verb}:\n${own.join("\n")}`).toBeLessThanOrEqual(bound[verb]);
    }
    // Each event (approve has two: the vote and the approval) is one statement: its audit row,
    // outbox rows and announcement together.
    const events = { submit: 1, approve: 2, claim: 1, report: 1 } as const;
    for (const verb of Object.keys(events) as (keyof typeof events)[]) {
      expect(sent[verb].length, `${verb}:\n${sent[verb].join("\n")}`).toBeLessThanOrEqual(bound[verb] + events[verb]);
    }
  });

  it("POST /v1/plans looks the agent's key up once, with its usage, then stores the plan", async () => {
    const { key } = await addAgent(h.ctx, { name: `statements-${Date.now()}` });
    const api = agentApi(h.ctx);
    database.take();
    const res = await api.request("/plans", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(mergeRequest({ title: "over HTTP" })),
    });
    expect(res.status).toBe(201);
    const sent = database.take();
    // drizzle quotes the table ('from "agents"'); the key lookup's own text does not (1eca4b6).
    expect(
      sent.filter((s) => /\bfrom "?agents"?(\s|$)/i.test(s)),
      sent.join("\n"),
    ).toHaveLength(1);
    // The key with the agent's usage against its limits, then the plan and its event.
    expect(sent.length, sent.join("\n")).toBeLessThanOrEqual(2);
  });

  it("an executor that finds nothing to claim costs BEGIN, one UPDATE, COMMIT", async () => {
    database.take();
    expect(await claimApproved(h.ctx)).toBeUndefined();
    expect(database.take().map((s) => s.split(" ")[0]!.toLowerCase())).toEqual(["begin", "update", "commit"]);
  });
});
