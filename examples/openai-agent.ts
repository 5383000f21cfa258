/**
 * An OpenAI Agents SDK agent whose only way to change the CRM is to ask people. Each tool
 * proposes a plan to Countersign and returns how it ended ("applied", "rejected: …", "stale: …"):
 * one changes a JSON resource over HTTP (the demo's `contacts` target), the other a row of the
 * CRM database (the `crm` target, there when `npm start` ran with DATABASE_URL).
 *
 *   npm install @openai/agents@0.14     # optional peer dependency (0.15+ needs Node 22)
 *   OPENAI_API_KEY=sk-… COUNTERSIGN_AGENT_KEY=$(cat .countersign/demo-agent.key) npx tsx examples/openai-agent.ts ["request"]
 */
import { Agent, run } from "@openai/agents";
import { z } from "zod";
import { Countersign } from "countersign/client";
import { countersignTool } from "countersign/client/openai-agents";

const key = process.env.COUNTERSIGN_AGENT_KEY;
if (!key || !process.env.OPENAI_API_KEY) {
  console.error("Set OPENAI_API_KEY and COUNTERSIGN_AGENT_KEY (npm start prints the demo agent's key; it is also in .countersign/demo-agent.key).");
  process.exit(2);
}
const client = new Countersign({ url: process.env.COUNTERSIGN_URL ?? "http://localhost:3000", key });

const updateContactEmail = countersignTool({
  client,
  name: "update_contact_email",
  description: "Change a contact's email address in the CRM (the demo's `contacts` target).",
  // Strict mode: every field is required.
  parameters: z.object({
    contactId: z.int().positive().describe("The contact's numeric id, e.g. 1 for Ana Lima."),
    email: z.string().describe("The new email address."),
    reason: z.string().describe("Why: who asked, and where (ticket, call, email)."),
  }),
  toPlan: ({ contactId, email, reason }) => ({
    title: `Update the email of contact ${contactId}`,
    reason,
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "http.json", target: "contacts", path: `/contacts/${contactId}`, op: "merge", body: { email } }],
  }),
  // After ten minutes the model is told the plan is still pending rather than kept waiting.
  timeoutMs: 10 * 60_000,
});

// The same kind of tool over a postgres.row action: one row of the `contacts` table, found by its
// key; the values are the columns it sets. The agent writes no SQL, and holds no database role.
const updateContactTier = countersignTool({
  client,
  name: "update_contact_tier",
  description: "Change a contact's support tier in the CRM database (the demo's `crm` target, table `contacts`).",
  parameters: z.object({
    contactId: z.int().positive().describe("The contact's numeric id, e.g. 2 for Bruno Costa."),
    tier: z.enum(["gold", "silver", "bronze"]).describe("The new tier."),
    reason: z.string().describe("Why: who asked, and where (ticket, call, email)."),
  }),
  toPlan: ({ contactId, tier, reason }) => ({
    title: `Set the tier of contact ${contactId} to ${tier}`,
    reason,
    onBehalfOf: "U0REQUESTER",
    actions: [{ kind: "postgres.row", target: "crm", table: "contacts", key: { id: contactId }, op: "update", values: { tier } }],
  }),
  timeoutMs: 10 * 60_000,
});

const agent = new Agent({
  name: "CRM assistant",
  instructions:
    "You keep the CRM up to date. Changes go through update_contact_email and update_contact_tier, which ask a person to approve. " +
    "Report how each change ended. If it was rejected, say why and do not retry the same change. " +
    "If it is stale, the contact changed meanwhile: tell the user rather than guessing.",
  tools: [updateContactEmail, updateContactTier],
  ...(process.env.OPENAI_MODEL ? { model: process.env.OPENAI_MODEL } : {}),
});

const request = process.argv.slice(2).join(" ") || "Ana Lima (contact 1) called: her new email is ana@new.example. Ticket 4411.";
const result = await run(agent, request);
console.log(result.finalOutput);
