/**
 * The plain client: propose one change to the demo's `contacts` target and wait for people to
 * decide. This script holds no credential for the target; it can only propose.
 *
 *   COUNTERSIGN_AGENT_KEY=$(cat .countersign/demo-agent.key) npx tsx examples/client.ts [new-email]
 */
import { Countersign, CountersignError } from "countersign/client";

const url = process.env.COUNTERSIGN_URL ?? "http://localhost:3000";
const key = process.env.COUNTERSIGN_AGENT_KEY;
if (!key) {
  console.error("Set COUNTERSIGN_AGENT_KEY (npm start prints the demo agent's key; it is also in .countersign/demo-agent.key).");
  process.exit(2);
}
const email = process.argv[2] ?? "ana@new.example";

const client = new Countersign({ url, key });
try {
  const plan = await client.submitPlan({
    title: "Update the email of Ana Lima",
    reason: "Customer asked by phone, ticket 4411",
    // The person who asked: shown to reviewers, and never allowed to approve their own request.
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "contacts", path: "/contacts/1", op: "merge", body: { email } }],
  });
  console.log(`Proposed ${plan.id} (${plan.status}), hash ${plan.hash}`);
  for (const action of plan.preview.actions) {
    console.log(`  ${action.op} ${action.target} ${action.path}`);
    for (const change of action.changes) console.log(`    ${change.path}: ${JSON.stringify(change.from)} → ${JSON.stringify(change.to)}`);
  }
  console.log(`Review it at ${plan.reviewUrl} (expires ${plan.expiresAt}). Waiting…`);

  const outcome = await client.waitForOutcome(plan.id, { timeoutMs: 15 * 60_000 });
  console.log(`${outcome.status}${outcome.reason ? `: ${outcome.reason}` : ""}`);
  for (const a of outcome.approvals) console.log(`  approved by ${a.userId} via ${a.via} at ${a.at}`);
  for (const a of outcome.outcome?.actions ?? []) {
    // verified: the target, re-read after the write, holds what was approved (false: see driftAfterApply).
    const check = a.verified === true ? ", verified" : a.verified === false ? ", NOT as approved" : a.verified === null ? ", not re-checked" : "";
    console.log(`  ${a.target} ${a.path}: ${a.status}${check}${a.detail ? ` (${a.detail})` : ""}`);
    for (const d of a.driftAfterApply ?? []) console.log(`    ${d.path}: approved ${JSON.stringify(d.expected) ?? "(absent)"}, target has ${JSON.stringify(d.actual) ?? "(absent)"}`);
  }
  process.exit(outcome.status === "applied" ? 0 : 1);
} catch (err) {
  // The server's refusals carry a stable code (unknown_target, policy_denied, invalid_request…).
  if (!(err instanceof CountersignError)) throw err;
  console.error(`${err.code}: ${err.message}`);
  for (const issue of err.issues ?? []) console.error(`  ${issue.path || "(request)"}: ${issue.message}`);
  process.exit(1);
}
