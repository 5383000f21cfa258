import { expect } from "vitest";
import { executePlan } from "../../../src/executor/execute-plan.ts";
import { loadVerifyingKeys } from "../../../src/grant/keys.ts";
import { Outcome } from "../../../src/plan/outcome.ts";
import type { ServiceContext } from "../../../src/service/context.ts";
import { decide } from "../../../src/service/decide/decide.ts";
import { ServiceError } from "../../../src/service/errors.ts";
import { claimApproved } from "../../../src/service/execution/claim-approved.ts";
import { reportOutcome } from "../../../src/service/execution/report-outcome.ts";
import { executionPorts } from "../../support/execution-ports.ts";
import { testGrantKeys } from "../../support/harness.ts";

/*
 * What the undo files share: a plan taken from approval to its reported outcome in-process
 * (decide, claim, the executor's executePlan over real targets, report), as a server and an
 * executor process do it.
 */

/** Approves as `approver`, claims, applies with the targets' write credentials and reports; the outcome. */
export async function approveAndApply(
  ctx: ServiceContext,
  plan: { id: string; hash: string },
  writeTargets: Record<string, { adapter: string }>,
  approver = "U0ALICE",
): Promise<Outcome> {
  await decide(ctx, { planId: plan.id, hash: plan.hash, actor: { userId: approver, via: "web" }, verdict: "approve" });
  const claim = await claimApproved(ctx);
  // Each test applies what it approves, so the plan just approved is the only one waiting.
  expect(claim?.plan.id).toBe(plan.id);
  const ports = executionPorts(await loadVerifyingKeys((await testGrantKeys()).publicPem), writeTargets, ctx.clock);
  try {
    const outcome = await executePlan(claim!, ports);
    await reportOutcome(ctx, { claimToken: claim!.claimToken, outcome });
    return Outcome.parse(outcome);
  } finally {
    await ports.close();
  }
}

/** The ServiceError a call is refused with (fails the test when it is not refused). */
export async function refusal(work: Promise<unknown>): Promise<ServiceError> {
  try {
    await work;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error("expected a refusal, got an answer");
}
