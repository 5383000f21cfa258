/**
 * The plain client: propose one change to the demo and wait for people to decide. This script
 * holds no credential for the target; it can only propose.
 *
 *   COUNTERSIGN_AGENT_KEY=$(cat .countersign/demo-agent.key) npx tsx examples/client.ts [new-email]
 *   … npx tsx examples/client.ts --row [new-email]    # the row in the `crm` database instead (start with DATABASE_URL)
 */
import { Countersign, CountersignError, type ActionRequestInput } from "countersign/client";

const url = process.env.COUNTERSIGN_URL ?? "http://localhost:3000";
const key = process.env.COUNTERSIGN_AGENT_KEY;
if (!key) {
  console.error("Set COUNTERSIGN_AGENT_KEY (npm start prints the demo agent's key; it is also in .countersign/demo-agent.key).");
  process.exit(2);
}
const args = process.argv.slice(2);
const row = args.includes("--row");
const email = args.find((a) => a !== "--row") ?? "ana@new.example";

// The same change either way; only the action differs. http.json: the JSON resource /contacts/1
// of the `contacts` target. postgres.row: the row with id 1 of the `contacts` table in the
// `crm` target's database (read with a role that may only SELECT; written by the executor alone).
const action: ActionRequestInput = row
  ? { kind: "postgres.row", target: "crm", table: "contacts", key: { id: 1 }, op: "update", values: { email } }
  : { kind: "http.json", target: "contacts", path: "/contacts/1", op: "merge", body: { email } };

const client = new Countersign({ url, key });
try {
  const plan = await client.submitPlan({
    title: "Update the email of Ana Lima",
    reason: "Customer asked by phone, ticket 4411",
    // The person who asked: shown to reviewers, and never allowed to approve their own request.
    onBehalfOf: "U0REQUESTER",
    actions: [action],
  });
  console.log(`Proposed ${plan.id} (${plan.status}), hash ${plan.hash}`);
  plan.preview.actions.forEach((preview, i) => {
    const planned = plan.plan.actions[i]!;
    // A row is named by its table and key; the version read is what the executor insists on.
    const what = planned.kind === "postgres.row" ? `table ${planned.table} key ${JSON.stringify(planned.key)}` : preview.path;
    console.log(`  ${preview.op} ${preview.target} ${what} (version read: ${preview.version ?? "none"})`);
    for (const change of preview.changes) console.log(`    ${change.path}: ${JSON.stringify(change.from)} → ${JSON.stringify(change.to)}`);
  });
  console.log(`Review it at ${plan.reviewUrl} (expires ${plan.expiresAt}). Waiting…`);

  const outcome = await client.waitForOutcome(plan.id, { timeoutMs: 15 * 60_000 });
  console.log(`${outcome.status}${outcome.reason ? `: ${outcome.reason}` : ""}`);
  for (const a of outcome.approvals) console.log(`  approved by ${a.userId} via ${a.via} at ${a.at}`);
  for (const a of outcome.outcome?.actions ?? []) {
    // verified: the target, re-read after the write, holds what was approved (false: see driftAfterApply).
    const check = a.verified === true ? ", verified" : a.verified === false ? ", NOT as approved" : a.verified === null ? ", not re-checked" : "";
    console.log(`  ${a.target} ${a.path}: ${a.status}${check}${a.detail ? ` (${a.detail})` : ""}`);
    for (const d of a.driftAfterApply ?? [])
      console.log(`    ${d.path}: approved ${JSON.stringify(d.expected) ?? "(absent)"}, target has ${JSON.stringify(d.actual) ?? "(absent)"}`);
  }
  process.exit(outcome.status === "applied" ? 0 : 1);
} catch (err) {
  // The server's refusals carry a stable code (unknown_target, policy_denied, invalid_request…).
  if (!(err instanceof CountersignError)) throw err;
  console.error(`${err.code}: ${err.message}`);
  for (const issue of err.issues ?? []) console.error(`  ${issue.path || "(request)"}: ${issue.message}`);
  process.exit(1);
}
