/**
 * `countersign mcp`: Countersign as an MCP server over stdio, for agents that speak MCP.
 *
 * It is a thin door onto the agent API through the TypeScript client: an agent can propose a
 * plan, read it and wait for its outcome. Nothing here can apply a change (only the executor
 * holds write credentials), which is why every tool is annotated as not touching the world.
 *
 * stdout carries MCP protocol messages and nothing else: a stray line there corrupts the
 * client's stream, so everything human goes to stderr.
 */
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { Countersign, CountersignError, FINAL_STATUSES, RateLimitedError, type FinalOutcome, type PlanView } from "../client/index.ts";
import { ConfigError } from "../config/load.ts";
import { packagePath } from "../package-path.ts";
import { ActionRequest, LIMITS, PlanRequest } from "../plan/schema.ts";
import type { Json } from "../plan/json.ts";

/** The longest wait_for_outcome blocks; an agent that needs longer calls it again. */
export const MAX_WAIT_SECONDS = 600;
/**
 * wait_for_outcome's default: under the 60 s request timeout most MCP clients use (the SDK's
 * own included), so a default call returns "still pending" rather than a client-side timeout.
 */
export const DEFAULT_WAIT_SECONDS = 50;
/** How often a long wait tells the client it is alive (clients may reset their timeout on it). */
const PROGRESS_EVERY_MS = 10_000;

/*
 * The input schema of propose_plan is the server's own PlanRequest, with a description on each
 * field for the model. The action kinds are ActionRequest's (one per registered adapter), each
 * with its own fields described below: `safeExtend` keeps their refinements (values per op,
 * one action per resource) and the union keeps ActionRequest's answer to an unknown kind. Any
 * field added to PlanRequest later is carried along as it is. The server validates again and
 * answers with its own codes.
 */

/** What the model reads about every field of every action kind; a kind or field without it does not compile. */
const ACTION_FIELD_HELP: { [K in ActionRequest["kind"]]: { [F in keyof Extract<ActionRequest, { kind: K }>]-?: string } } = {
  "http.json": {
    kind: 'Always "http.json": a JSON resource reached over HTTP.',
    target:
      'Name of an http.json target configured in Countersign, e.g. "contacts". A name that is not configured, or a target of another kind, is refused with unknown_target.',
    path: 'Path of the resource on the target, starting with "/", e.g. "/contacts/1".',
    op:
      "merge: JSON Merge Patch into the existing resource (only the fields in body change; null removes a field). " +
      "replace: the whole resource becomes body. create: a new resource at path, which must not exist yet. " +
      "delete: remove the resource (no body).",
    body: "The JSON to write: for merge, an object with just the fields to change; for replace and create, the complete object or array. Omit for delete.",
  },
  "postgres.row": {
    kind: 'Always "postgres.row": one row of a PostgreSQL table that the target\'s config lists. No SQL is taken from you: only this description of the row.',
    target:
      'Name of a postgres.row target configured in Countersign, e.g. "crm". A name that is not configured, or a target of another kind, is refused with unknown_target.',
    table: 'A table the target lets agents change, e.g. "contacts". Any other table is refused with policy_denied.',
    key: 'The row\'s key: exactly the table\'s key columns and their values, e.g. {"id": 42}. Each a number or a string (int8 and numeric keys as decimal strings, e.g. "9007199254740993").',
    op:
      "update: set the columns in values on the existing row (applied only if the row still has the version read now). " +
      "insert: a new row with this key, which must not exist yet; values gives the other columns (NOT NULL columns without a default included). " +
      "delete: remove the row (no values).",
    values:
      'Column name → new value, each in its column type\'s JSON form: numbers for int2/int4, decimal strings for int8 and numeric ("12.50"), ' +
      'strings for text/varchar/uuid, "2026-12-03" for date, ISO-8601 for timestamptz ("2026-12-03T10:00:00.000000Z"), true/false for bool, base64 for bytea, any JSON for jsonb. ' +
      "Key and version columns cannot be set. Required for update, omitted for delete. A value its column cannot hold as given is refused with preview_failed naming the column.",
  },
};

/** ActionRequest's kinds with every field described; the schemas themselves are the plan schema's. */
const describedActions = ActionRequest.options.map((action) => {
  const help: Record<string, string> = ACTION_FIELD_HELP[action.shape.kind.value];
  const shape: Record<string, z.ZodType> = action.shape;
  return action.safeExtend(Object.fromEntries(Object.entries(shape).map(([field, type]) => [field, type.describe(help[field]!)])));
}) as unknown as typeof ActionRequest.options;

export const ProposePlanInput = PlanRequest.safeExtend({
  title: PlanRequest.shape.title.describe('One line a reviewer reads first: what changes, where, for whom. E.g. "Update Ana Lima\'s email".'),
  reason: PlanRequest.shape.reason.describe(
    "Why this change is needed: the request, ticket or evidence behind it. Reviewers see it verbatim; a clear reason gets a faster decision.",
  ),
  actions: z
    .array(ActionRequest.clone({ ...ActionRequest.def, options: describedActions }))
    .min(1)
    .max(LIMITS.maxActions)
    .describe(
      `The changes, 1 to ${LIMITS.maxActions}, applied in this order by a separate executor only after people approve. ` +
        "Each resource (target + path, or target + table + key) at most once.",
    ),
  ttlSeconds: PlanRequest.shape.ttlSeconds.describe(
    "Seconds reviewers have to decide before the plan expires by itself. Omit for the target's default; above its maximum is refused.",
  ),
  onBehalfOf: PlanRequest.shape.onBehalfOf.describe(
    "Slack user id (e.g. U024BE7LH) of the person who asked for this change. Shown to reviewers; that person cannot approve it.",
  ),
  supersedes: PlanRequest.shape.supersedes.describe(
    "To change a plan you proposed that is still pending, approved but not yet applied, or stale: its id. The new plan replaces it " +
      "(it becomes superseded; approvals do not carry over) and reviewers see what changed since it, in the same Slack thread. " +
      "Refused with not_supersedable when that plan is final, already being applied, or already replaced (then re-plan from the newest).",
  ),
  idempotencyKey: PlanRequest.shape.idempotencyKey.describe(
    "A unique string for this proposal. Retrying with the same key and the same plan returns the existing plan instead of creating a second one; " +
      "the same key with a different plan is refused (idempotency_conflict). Use it whenever a call might be retried.",
  ),
});

const PlanId = z.string().min(1).max(100).describe("The plan id returned by propose_plan.");

/** The tools over a client. Exported so the tool set can be built without stdio. */
export function createMcpServer(client: Countersign, version = packageVersion()): McpServer {
  const server = new McpServer({ name: "countersign", version });

  server.registerTool(
    "propose_plan",
    {
      title: "Propose a plan for human approval",
      description:
        "Propose changes to a system for people to review. Nothing is changed by this call: Countersign reads the current state " +
        "(read-only), shows reviewers a before → after preview, and a separate executor applies the plan only if they approve. " +
        "Returns the plan id, its hash, status (pending), expiry, the previewed changes and the URL where people review it. " +
        "Then call wait_for_outcome with the id. Idempotent only when you pass an idempotencyKey: a retry with the same key and " +
        "the same plan returns the existing plan; without a key every call creates a new plan. " +
        "Each agent may propose only so many plans a minute and have only so many waiting; beyond that the call fails with rate_limited and says how many seconds to wait.",
      inputSchema: ProposePlanInput,
      // It creates a plan (so not read-only) but changes no target; without an idempotencyKey a
      // repeat creates a second plan, and annotations cannot depend on the arguments.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (request, extra) =>
      refusalsAsToolErrors(async () => {
        const plan = await client.submitPlan(request, { signal: extra.signal });
        return result(proposedText(plan), {
          id: plan.id,
          hash: plan.hash,
          status: plan.status,
          expiresAt: plan.expiresAt,
          reviewUrl: plan.reviewUrl,
          preview: structuredActions(plan),
        });
      }),
  );

  server.registerTool(
    "propose_undo",
    {
      title: "Ask for an applied plan to be taken back",
      description:
        "Ask for one of your applied plans (or a failed one that was partly applied) to be undone. Nothing is changed by this call: Countersign " +
        "proposes a new plan that restores what each written action found before it (last written first), previews it read-only and posts it " +
        "for people to approve like any plan. Returns the undo's plan id (its undoes is the plan taken back); call wait_for_outcome with it. " +
        "Refused with undo_open when an undo of that plan is already waiting (details.planId: wait for that one), not_undoable when it wrote " +
        "nothing or was taken back already, undo_target_changed when someone changed the same fields since (nothing is proposed: re-read the " +
        "target and propose a plan of your own instead), undo_refused when the target's rules refuse an action of the undo.",
      inputSchema: z.strictObject({
        planId: PlanId,
        idempotencyKey: PlanRequest.shape.idempotencyKey.describe(
          "A unique string for this request: a retry with the same key returns the same undo instead of asking again.",
        ),
      }),
      // Like propose_plan: it makes a plan, and changes no target.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ planId, idempotencyKey }, extra) =>
      refusalsAsToolErrors(async () => {
        const plan = await client.proposeUndo(planId, idempotencyKey !== undefined ? { idempotencyKey } : {}, { signal: extra.signal });
        return result(proposedText(plan), {
          id: plan.id,
          hash: plan.hash,
          status: plan.status,
          undoes: plan.plan.undoes,
          expiresAt: plan.expiresAt,
          reviewUrl: plan.reviewUrl,
          preview: structuredActions(plan),
        });
      }),
  );

  server.registerTool(
    "get_plan",
    {
      title: "Read a plan",
      description:
        "Read one of your plans as it is now: status (pending, approved, executing, applied, rejected, expired, cancelled, stale, failed, superseded, revoked), " +
        "its actions and previewed changes, approvals, the rejection reason and the executor's per-action results (for stale: what changed on the target since the preview), " +
        "and while it waits, watch.failingSince if its target could not be re-checked lately. Does not wait; use wait_for_outcome for that.",
      inputSchema: z.strictObject({ planId: PlanId }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ planId }, extra) =>
      refusalsAsToolErrors(async () => {
        const plan = await client.getPlan(planId, { signal: extra.signal });
        return result(planText(plan), structuredPlan(plan));
      }),
  );

  server.registerTool(
    "wait_for_outcome",
    {
      title: "Wait for a plan's outcome",
      description:
        "Wait until people decide on a plan and, if approved, the executor has applied it. Returns the final status with approvals, " +
        "the reason (rejected, stale, failed, expired) and per-action results. applied: done; each written action says whether the target, re-read after the write, holds what was approved (verified), and if not which fields differ: read the target again before relying on it. rejected: read the reason before proposing anything else. " +
        "stale: the target changed after the preview and nothing was written (Countersign watches targets while a plan waits, and re-reads them when someone approves); re-read and propose again with supersedes set to this plan's id. " +
        "A reviewer may edit a plan's values before approving it: the edited version replaces yours, and this waits for it and says editedBy (the values applied are the reviewer's; planId is then the edited version's). " +
        "superseded: you replaced it with a newer version; wait for that one. revoked: someone withdrew the approval before it was applied; read the reason. expired/cancelled: nothing was applied. " +
        "An approved plan may wait while Countersign is paused, while no executor can verify its grant, or while no executor is connected (held: the reason is given); keep waiting. " +
        `If the plan is still open after timeoutSeconds (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}) it says so; call again to keep waiting.`,
      inputSchema: z.strictObject({
        planId: PlanId,
        timeoutSeconds: z
          .int()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .default(DEFAULT_WAIT_SECONDS)
          .describe(`How long to wait, in seconds (0 to ${MAX_WAIT_SECONDS}). Your MCP client may give up on a call sooner than this.`),
      }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ planId, timeoutSeconds }, extra) =>
      refusalsAsToolErrors(async () => {
        // Progress notifications let clients that reset their request timeout on progress wait
        // for the whole timeoutSeconds; they are only sent when the client asked for them.
        const progressToken = extra._meta?.progressToken;
        const started = Date.now();
        const timer =
          progressToken === undefined
            ? undefined
            : setInterval(() => {
                const elapsed = Math.round((Date.now() - started) / 1000);
                void extra
                  .sendNotification({
                    method: "notifications/progress",
                    params: { progressToken, progress: elapsed, total: timeoutSeconds, message: `waiting for plan ${planId} (${elapsed} s)` },
                  })
                  .catch(() => {});
              }, PROGRESS_EVERY_MS);
        try {
          const outcome = await client.waitForOutcome(planId, { signal: extra.signal, timeoutMs: timeoutSeconds * 1000 });
          return result(outcomeText(outcome), structuredOutcome(outcome));
        } catch (err) {
          if (!(err instanceof CountersignError) || err.code !== "timeout") throw err;
          const plan = await client.getPlan(planId, { signal: extra.signal });
          // It may have ended between the last poll and now.
          if ((FINAL_STATUSES as readonly string[]).includes(plan.status)) {
            return result(planText(plan), structuredPlan(plan));
          }
          return result(
            `Plan ${plan.id} is still ${plan.status} after ${timeoutSeconds} s (${plan.approvals.length} approval(s) so far; expires ${plan.expiresAt}). ` +
              (plan.held ? `${heldText(plan.held)} ` : "") +
              `Call wait_for_outcome again to keep waiting. Review: ${plan.reviewUrl}`,
            {
              planId: plan.id,
              status: plan.status,
              final: false,
              approvals: plan.approvals,
              expiresAt: plan.expiresAt,
              reviewUrl: plan.reviewUrl,
              ...(plan.held ? { held: plan.held } : {}),
            },
          );
        } finally {
          if (timer) clearInterval(timer);
        }
      }),
  );

  return server;
}

/**
 * Runs the MCP server on stdin/stdout until the client closes stdin or a signal arrives.
 * Resolves with the process exit code.
 */
export async function runMcpServer(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const url = env.COUNTERSIGN_URL?.trim();
  const key = env.COUNTERSIGN_AGENT_KEY?.trim();
  const problems: { key: string; message: string }[] = [];
  if (!url)
    problems.push({
      key: "COUNTERSIGN_URL",
      message: "is not set: set it to Countersign's base URL (e.g. http://localhost:3000) in the MCP client's env for this server",
    });
  else if (!URL.canParse(url)) problems.push({ key: "COUNTERSIGN_URL", message: `is not a URL: '${url}'` });
  if (!key)
    problems.push({
      key: "COUNTERSIGN_AGENT_KEY",
      message: "is not set: create an agent with `countersign agents add NAME` and put its key (the last line printed) in the MCP client's env for this server",
    });
  if (!url || !key || problems.length > 0) throw new ConfigError("countersign mcp environment", problems);

  // A library writing to stdout through console would corrupt the protocol stream.
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);

  const server = createMcpServer(new Countersign({ url, key }));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    // The client ends the session by closing our stdin (or by signalling us).
    process.stdin.once("end", () => resolve());
    process.stdin.once("close", () => resolve());
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await server.connect(transport);
  process.stderr.write(`countersign mcp: serving ${url} over stdio\n`);
  await closed;
  await server.close();
  return 0;
}

// ——— results ———

function result(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: structured };
}

/** A refusal from Countersign becomes a tool error the model can read: its code, message and issues. */
async function refusalsAsToolErrors(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof CountersignError)) throw err;
    if (err instanceof RateLimitedError) {
      // Said plainly, with the wait: a model told only "429" tends to retry at once, or give up.
      const at = new Date(Date.now() + err.retryAfterSeconds * 1000).toISOString();
      return {
        isError: true,
        content: [
          {
            type: "text",
            text: `rate_limited: ${err.message} Nothing was created. Wait ${err.retryAfterSeconds} s (until ${at}), then call propose_plan again with the same plan; do not retry sooner.`,
          },
        ],
        structuredContent: {
          error: { code: err.code, message: err.message, retryAfterSeconds: err.retryAfterSeconds, retryAt: at, ...(err.limit ? { limit: err.limit } : {}) },
        },
      };
    }
    const issues = (err.issues ?? []).map((i) => `\n- ${i.path || "(request)"}: ${i.message}`).join("");
    return {
      isError: true,
      content: [{ type: "text", text: `${err.code}: ${err.message}${issues}` }],
      // details carry what an answer names, e.g. the open undo's planId (undo_open).
      structuredContent: {
        error: { code: err.code, message: err.message, ...(err.issues ? { issues: err.issues } : {}), ...(err.details ? { details: err.details } : {}) },
      },
    };
  }
}

const MAX_CHANGES_SHOWN = 20;

function short(value: Json | undefined, max = 120): string {
  if (value === undefined) return "(absent)";
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

type Previewed = PlanView["preview"]["actions"][number];
type Planned = PlanView["plan"]["actions"][number];

/** Each action's preview, what a reviewer will see, in short: the kind decides how (a row per column, a document per field). */
function changesText(plan: PlanView): string {
  return plan.preview.actions
    .map((action, i) => {
      const planned = plan.plan.actions[i];
      return `  ${i}. ${planned?.kind === "postgres.row" ? rowText(action, planned) : documentText(action)}`;
    })
    .join("\n");
}

/** http.json: the fields the merge, replace, create or delete changes, one line each. */
function documentText(action: Previewed): string {
  const changes = action.changes.slice(0, MAX_CHANGES_SHOWN).map((c) => `\n    ${c.path || "(whole resource)"}: ${short(c.from)} → ${short(c.to)}`);
  const more = action.changes.length > MAX_CHANGES_SHOWN ? `\n    … and ${action.changes.length - MAX_CHANGES_SHOWN} more` : "";
  const none = action.changes.length === 0 ? "\n    (no change: the target already holds this)" : "";
  return `${action.op} ${action.target} ${action.path} (version read: ${action.version ?? "none"})${changes.join("")}${more}${none}`;
}

const MAX_UNCHANGED_NAMED = 12;

/**
 * postgres.row: the row's columns before → after (an insert's from no row, a delete's to
 * none), the columns left as they are by name, and the version the executor will insist on.
 */
function rowText(action: Previewed, planned: Extract<Planned, { kind: "postgres.row" }>): string {
  const before = isRow(action.before) ? action.before : undefined;
  const after = isRow(action.after) ? action.after : undefined;
  const columns = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  // Own columns only: a column may be called "constructor".
  const value = (row: Record<string, Json>, column: string) => (Object.hasOwn(row, column) ? row[column] : undefined);
  const cell = (row: Record<string, Json> | undefined, column: string) => (row === undefined ? "(no row)" : short(value(row, column)));
  const changed = columns.filter((c) => before === undefined || after === undefined || !isDeepStrictEqual(value(before, c), value(after, c)));
  const unchanged = columns.filter((c) => !changed.includes(c));
  const version =
    action.version === null
      ? "no row there now: written only if it is still absent"
      : `version read: ${action.version} (${action.precondition === "xmin" ? "the row's xmin" : "its version column"}); written only if the row still has it`;
  const lines = [
    `${action.op} ${action.target} table ${planned.table} key ${short(planned.key)} (${action.path}; ${version})`,
    ...changed.slice(0, MAX_CHANGES_SHOWN).map((c) => `    ${c}: ${cell(before, c)} → ${cell(after, c)}`),
    ...(changed.length > MAX_CHANGES_SHOWN ? [`    … and ${changed.length - MAX_CHANGES_SHOWN} more changed columns`] : []),
    ...(changed.length === 0 ? ["    (no change: the row already holds this)"] : []),
    ...(unchanged.length > 0
      ? [
          `    unchanged: ${unchanged.slice(0, MAX_UNCHANGED_NAMED).join(", ")}${unchanged.length > MAX_UNCHANGED_NAMED ? `, and ${unchanged.length - MAX_UNCHANGED_NAMED} more` : ""}`,
        ]
      : []),
  ];
  return lines.join("\n");
}

function isRow(value: Json | null): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What the structured answers say of each action: where, what, the version read and, for a row, its columns before and after. */
function structuredActions(plan: PlanView): Record<string, unknown>[] {
  return plan.preview.actions.map((a, i) => {
    const planned = plan.plan.actions[i];
    return {
      ...(planned ? { kind: planned.kind } : {}),
      target: a.target,
      path: a.path,
      op: a.op,
      ...(planned?.kind === "postgres.row" ? { table: planned.table, key: planned.key, before: a.before, after: a.after } : {}),
      version: a.version,
      ...(a.precondition !== undefined ? { precondition: a.precondition } : {}),
      changes: a.changes,
    };
  });
}

function proposedText(plan: PlanView): string {
  return [
    `Proposed plan ${plan.id} — status ${plan.status}. Nothing has been applied; people review it now.`,
    `hash: ${plan.hash}`,
    `expires: ${plan.expiresAt}`,
    `review: ${plan.reviewUrl}`,
    "changes:",
    changesText(plan),
    `Next: call wait_for_outcome with planId "${plan.id}".`,
  ].join("\n");
}

function approvalsText(approvals: PlanView["approvals"]): string {
  return approvals.length === 0 ? "none" : approvals.map((a) => `${a.userId} via ${a.via} at ${a.at}`).join(", ");
}

function actionResultsText(outcome: FinalOutcome["outcome"]): string[] {
  if (!outcome) return [];
  return [
    "results:",
    ...outcome.actions.flatMap((a) => [
      `  ${a.index}. ${a.target} ${a.path}: ${a.status}${a.reconciled ? " (already held the change)" : ""}${VERIFIED_TEXT[String(a.verified)] ?? ""}${a.detail ? ` — ${a.detail}` : ""}`,
      ...(a.driftAfterApply ?? []).map(
        (d) => `     ${d.path || "(whole document)"}: approved ${short(d.expected as Json | undefined)}, target has ${short(d.actual as Json | undefined)}`,
      ),
      // Stale: what moved on the target since the preview, for the re-plan.
      ...(a.status === "stale" && (a.expected !== undefined || a.now !== undefined)
        ? [`     version expected ${a.expected ?? "(none)"}, found ${a.now ?? "(none)"}`]
        : []),
      ...(a.changedSincePreview ?? [])
        .slice(0, MAX_CHANGES_SHOWN)
        .map(
          (c) => `     changed since the preview: ${c.path || "(whole resource)"}: ${short(c.from as Json | undefined)} → ${short(c.to as Json | undefined)}`,
        ),
    ]),
    ...(outcome.partial ? ["  (partial: some actions were written and a later one was not)"] : []),
  ];
}

const NEXT_STEP: Record<FinalOutcome["status"], string> = {
  applied: "The change is applied.",
  rejected: "A reviewer rejected it; nothing was applied. Address the reason before proposing again.",
  expired: "Nobody decided in time (or the approval went unused); nothing was applied.",
  cancelled: "It was withdrawn; nothing was applied.",
  stale: "The target changed after the preview; nothing was written. Re-read the target and propose a new plan (pass this plan's id as supersedes).",
  superseded: "You replaced it with a newer version (supersedes); nothing of this one will be applied. Wait for the newer version instead.",
  revoked: "Someone who may decide it withdrew the approval before any executor applied it; nothing was applied. Read the reason before proposing again.",
  failed: "The executor could not apply it; see the results for what was written.",
};

/** What the executor's re-read after each write found (verify after apply). */
const VERIFIED_TEXT: Record<string, string> = {
  true: ", verified",
  false: ", NOT as previewed: the target, re-read after the write, differs",
  null: ", not re-checked after the write",
};

function outcomeText(outcome: FinalOutcome): string {
  const drifted = outcome.outcome?.actions.filter((a) => a.verified === false).length ?? 0;
  return [
    `Plan ${outcome.id}: ${outcome.status}${outcome.reason ? `: ${outcome.reason}` : ""}`,
    ...(outcome.editedBy
      ? [
          `Edited by ${outcome.editedBy.userId} via ${outcome.editedBy.via} before approval: this is the edited version of the plan you proposed, and its values are the reviewer's (see changes).`,
          "changes:",
          changesText(outcome.plan),
        ]
      : []),
    NEXT_STEP[outcome.status] +
      (outcome.status === "applied" && drifted > 0
        ? ` But ${drifted} write(s) did not land as approved (see the results): read the target again before relying on it, and propose a correction if needed.`
        : ""),
    `approvals: ${approvalsText(outcome.approvals)}`,
    ...actionResultsText(outcome.outcome),
  ].join("\n");
}

function structuredOutcome(outcome: FinalOutcome): Record<string, unknown> {
  return {
    planId: outcome.id,
    hash: outcome.hash,
    status: outcome.status,
    final: true,
    approvals: outcome.approvals,
    ...(outcome.editedBy ? { editedBy: outcome.editedBy } : {}),
    ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
    ...(outcome.outcome ? { results: outcome.outcome.actions, partial: outcome.outcome.partial ?? false } : {}),
  };
}

/** Why an approved plan is not being applied: Countersign is paused, or no executor asking for work can verify its grant. */
function heldText(held: NonNullable<PlanView["held"]>): string {
  if (held.by === "grant_key_mismatch")
    return `Held: the executors asking for work cannot verify this plan's grant (since ${held.since}: ${held.reason}); an operator must give an executor the server's public key. Keep waiting, or tell a person.`;
  if (held.by === "no_executor")
    return `Held: no executor is connected (since ${held.since}: ${held.reason}); an operator must start one. Keep waiting, or tell a person.`;
  return `Held: Countersign is paused (since ${held.since}: ${held.reason}); no executor takes a plan until it resumes, so keep waiting.`;
}

function planText(plan: PlanView): string {
  const reason = plan.rejection?.reason ?? plan.revocation?.reason ?? plan.outcome?.reason;
  return [
    `Plan ${plan.id}: ${plan.status}${reason ? `: ${reason}` : ""}`,
    `title: ${plan.plan.title}`,
    `hash: ${plan.hash}`,
    `expires: ${plan.expiresAt}`,
    `review: ${plan.reviewUrl}`,
    `approvals: ${approvalsText(plan.approvals)} (${plan.plan.policy.requiredApprovals} required)`,
    ...(plan.rejection ? [`rejected by ${plan.rejection.userId} via ${plan.rejection.via}`] : []),
    ...(plan.revocation ? [`revoked by ${plan.revocation.userId} via ${plan.revocation.via}`] : []),
    ...(plan.plan.editedBy
      ? [`values edited by ${plan.plan.editedBy.userId} via ${plan.plan.editedBy.via} (this version replaces ${plan.plan.supersedes})`]
      : []),
    ...(plan.supersededBy
      ? [
          `superseded by plan ${plan.supersededBy.id}${plan.supersededBy.editedBy ? `, a reviewer's edit (${plan.supersededBy.editedBy.userId}): read or wait for that one, it is yours too` : ""}`,
        ]
      : []),
    ...(plan.undoes ? [`this plan undoes plan ${plan.undoes.id}: approved and applied, it restores what that plan changed`] : []),
    ...(plan.undoneBy ? [`taken back by plan ${plan.undoneBy.id}, an undo that was applied`] : []),
    ...(plan.held ? [heldText(plan.held)] : []),
    "changes:",
    changesText(plan),
    ...actionResultsText(plan.outcome),
  ].join("\n");
}

function structuredPlan(plan: PlanView): Record<string, unknown> {
  const reason = plan.rejection?.reason ?? plan.revocation?.reason ?? plan.outcome?.reason;
  return {
    planId: plan.id,
    hash: plan.hash,
    status: plan.status,
    final: (FINAL_STATUSES as readonly string[]).includes(plan.status),
    title: plan.plan.title,
    expiresAt: plan.expiresAt,
    reviewUrl: plan.reviewUrl,
    requiredApprovals: plan.plan.policy.requiredApprovals,
    approvals: plan.approvals,
    ...(reason !== undefined ? { reason } : {}),
    ...(plan.plan.editedBy ? { editedBy: plan.plan.editedBy } : {}),
    ...(plan.supersededBy ? { supersededBy: plan.supersededBy } : {}),
    ...(plan.undoes ? { undoes: plan.undoes } : {}),
    ...(plan.undoneBy ? { undoneBy: plan.undoneBy } : {}),
    ...(plan.held ? { held: plan.held } : {}),
    actions: structuredActions(plan),
    ...(plan.outcome ? { results: plan.outcome.actions } : {}),
  };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(packagePath("package.json"), "utf8")) as { version?: string };
  return pkg.version ?? "0.0.0";
}
