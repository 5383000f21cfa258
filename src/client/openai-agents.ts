/**
 * Countersign for the OpenAI Agents SDK (`@openai/agents` 0.14.x, an optional peer dependency:
 * 0.15+ pulls `openai@7`, which needs Node 22). Only this module imports it.
 *
 * `countersignTool` turns a zod-typed action into an SDK `tool()` that does not do the action:
 * it proposes it as a plan, waits for people to decide and for the executor to apply it, and
 * tells the model how it ended in a few words the model can act on. The agent never holds a
 * credential for the target (an HTTP API's token, a database's write role).
 */
import { tool, type FunctionTool } from "@openai/agents";
import type { z } from "zod";
import { CountersignError, type Countersign, type FinalOutcome, type PlanRequestInput } from "./index.js";

export interface CountersignToolOptions<P extends z.ZodObject> {
  /** Countersign's client, holding the agent's key. */
  client: Countersign;
  /** The tool's name as the model sees it, e.g. "update_contact_email". */
  name: string;
  /** What the action does, for the model. A note on approval and the possible results is appended. */
  description: string;
  /**
   * The arguments the model fills in. The SDK uses strict mode for zod parameters: every field
   * must be required (use `.nullable()` rather than `.optional()`).
   */
  parameters: P;
  /**
   * Builds the plan from the model's (already validated) arguments. Its actions are of any kind
   * the server has: `http.json` (`{ kind, target, path, op, body }`) or `postgres.row`
   * (`{ kind, target, table, key, op, values }`), typed by `kind`.
   */
  toPlan: (args: z.output<P>) => PlanRequestInput;
  /**
   * How long to wait for an outcome before telling the model the plan is still pending. Default:
   * no limit of our own: every plan ends by itself (it expires when nobody decides).
   */
  timeoutMs?: number;
}

/** What the model is told. Short on purpose: it is a prompt for the next step, not a report. */
export type CountersignToolResult =
  | "applied"
  | `applied, not as approved: ${string}`
  | `applied as edited by ${string}: ${string}`
  | `rejected: ${string}`
  | "stale: target changed, re-plan"
  | "expired"
  | "cancelled"
  | "superseded: a newer version replaced it"
  | `revoked: ${string}`
  | `failed: ${string}`
  | `refused: ${string}`
  | `pending: ${string}`
  | `error: ${string}`;

const RESULTS_NOTE =
  "Calling this does not make the change: it proposes it to people for approval and waits. " +
  'It returns "applied" (done), "applied, not as approved: <fields>" (written, but the target differs from what was approved: read it again), ' +
  '"applied as edited by <reviewer>: <fields>" (a reviewer changed values before approving; what was written is theirs), "rejected: <reason>", "stale: target changed, re-plan", "expired", "cancelled", ' +
  '"superseded: a newer version replaced it", "revoked: <reason>" (an approval withdrawn before it was applied), ' +
  '"failed: <reason>", or "refused: <code>: <message>" when Countersign refuses the proposal itself.';

export function countersignTool<P extends z.ZodObject, Context = unknown>(options: CountersignToolOptions<P>): FunctionTool<Context, P, string> {
  const { client, name, toPlan, timeoutMs } = options;
  // tool()'s options type distributes over strict/non-strict parameters (Extract<P, …>), which
  // TypeScript cannot resolve for a generic P; any zod object is strict-mode parameters, so the
  // tool is built over the base type and the arguments are cast back to P's output below.
  return tool<z.ZodObject, Context, string>({
    name,
    description: `${options.description.trim()}\n\n${RESULTS_NOTE}`,
    parameters: options.parameters,
    async execute(args, _runContext, details) {
      const signal = details?.signal;
      const request = toPlan(args as z.output<P>);
      // The model's call id makes a repeated invocation of the same call (a resumed run, a
      // retry) find the plan it already proposed instead of asking people twice.
      const callId = details?.toolCall?.callId;
      const plan = request.idempotencyKey === undefined && callId ? { ...request, idempotencyKey: `openai-agents:${name}:${callId}` } : request;

      let id: string;
      try {
        id = (await client.submitPlan(plan, signal ? { signal } : {})).id;
      } catch (err) {
        // Only the server's refusals are answers; anything else (network, abort) is the SDK's to handle.
        if (err instanceof CountersignError && err.status !== undefined) return refused(err);
        throw err;
      }

      try {
        return outcomeResult(await client.waitForOutcome(id, { ...(signal ? { signal } : {}), ...(timeoutMs !== undefined ? { timeoutMs } : {}) }));
      } catch (err) {
        if (signal?.aborted) throw err;
        // The plan exists and people may still decide it: say so, so the model does not propose it again.
        if (err instanceof CountersignError && err.code === "timeout") {
          return `pending: no outcome after ${Math.round((timeoutMs ?? 0) / 1000)} s; plan ${id} is still open, do not propose it again`;
        }
        return `error: lost track of plan ${id} (${(err as Error).message}); it may still be decided, do not propose it again`;
      }
    },
  });
}

/** The final status in the words the model is told to expect. */
export function outcomeResult(outcome: FinalOutcome): CountersignToolResult {
  switch (outcome.status) {
    case "applied": {
      // The executor re-read each target after writing: a field that did not land is said, not hidden behind "applied".
      const drift = (outcome.outcome?.actions ?? []).flatMap((a) =>
        a.verified !== false
          ? []
          : a.driftAfterApply?.length
            ? a.driftAfterApply.map((d) => `${a.path}${d.path} is ${shown(d.actual)} (approved ${shown(d.expected)})`)
            : [`${a.path} differs`],
      );
      if (drift.length > 0)
        return `applied, not as approved: ${drift.slice(0, 5).join("; ")}${drift.length > 5 ? `; and ${drift.length - 5} more` : ""}; read the target again before relying on it`;
      // A reviewer's values went in, not the model's: said, so it does not assume its own.
      if (outcome.editedBy) return `applied as edited by ${outcome.editedBy.userId}: ${editedText(outcome)}; read the target for the values written`;
      return "applied";
    }
    case "rejected":
      return `rejected: ${outcome.reason || "no reason given"}`;
    case "stale":
      return "stale: target changed, re-plan";
    case "expired":
      return "expired";
    case "cancelled":
      return "cancelled";
    case "superseded":
      return "superseded: a newer version replaced it";
    case "revoked":
      return `revoked: ${outcome.reason || "no reason given"}`;
    case "failed": {
      const failedAction = outcome.outcome?.actions.find((a) => a.status === "failed");
      return `failed: ${outcome.reason ?? failedAction?.detail ?? "the executor could not apply it"}`;
    }
  }
}

/** The values the edited version writes, action by action, as far as a line allows. */
function editedText(outcome: FinalOutcome): string {
  const written = outcome.plan.plan.actions.map((a) =>
    a.kind === "http.json" ? `${a.path} ${shown(a.body)}` : `${a.table} ${shown(a.key)} ${shown(a.values)}`,
  );
  return written.slice(0, 5).join("; ") + (written.length > 5 ? `; and ${written.length - 5} more` : "");
}

function shown(value: unknown): string {
  if (value === undefined) return "absent";
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function refused(err: CountersignError): CountersignToolResult {
  const issues = (err.issues ?? []).map((i) => `${i.path || "(request)"}: ${i.message}`);
  return `refused: ${err.code}: ${err.message}${issues.length ? ` (${issues.join("; ")})` : ""}`;
}
