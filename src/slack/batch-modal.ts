/**
 * The modals of a batch of alike plans: opening (a placeholder while the batch is read), the batch
 * itself (each plan's title, short hash and change, masked as previews are; Approve-all as the
 * submit button, Reject-all opening a reason dialog), the work in progress and the answer per
 * plan. Pure: batch-listeners.ts opens and updates them.
 */
import type { View } from "@slack/types";
import type { Change } from "../contract/agent-api.ts";
import type { Json } from "../plan/json.ts";
import { shortHash } from "../plan/fingerprint.ts";
import type { AlikeOffer } from "../plan/alike.ts";
import { MAX_STATED_REASON_CHARS } from "../service/access/index.ts";
import type { BatchDecision, BatchPlan, BatchPlanResult, BatchView } from "../service/batch/index.ts";
import { inlineCode, mrkdwn, mrkdwnText, plainText, singleLine, slackDate } from "./escape.ts";
import type { Block } from "./plan-message.ts";
import { SLACK_LIMITS } from "./render.ts";

/** The most plans a batch opened in Slack holds (and its modal shows); the browser's batch page holds more. */
export const SLACK_BATCH_PLANS = 20;

/** Block and action ids the listeners read back. */
export const BATCH_IDS = {
  open: "batch_open",
  approve: "batch_approve",
  rejectButton: "batch_reject_open",
  reject: "batch_reject",
  reason: "reason",
} as const;

/** What the batch's own modal carries to its submission and to the Reject-all dialog. */
export interface BatchModalMeta {
  batchId: string;
}

/** What the Reject-all dialog carries: the batch, and the batch's modal beneath it, which is updated with the answer too. */
export interface BatchRejectMeta extends BatchModalMeta {
  rootViewId: string;
}

const SHOWN = { title: 150, alike: 400, agent: 80, target: 60, path: 120, value: 80, changesPerAction: 3, actionsPerPlan: 2, resultTitle: 80, message: 300 };
/** Slack's limits for views: 100 blocks, a 24-character title and buttons. */
const VIEW = { blocks: 100, title: 24, button: 24 };

/** "Review N like plans" buttons, one per offer (at most 5), for an actions block of the App Home or a digest. */
export function alikeButtons(offers: readonly AlikeOffer[]): Block[] {
  // Action ids are unique within a message or view; the listener takes every `batch_open_<n>`.
  return offers.slice(0, 5).map((offer, i) => ({
    type: "button",
    action_id: `${BATCH_IDS.open}_${i}`,
    text: plainText(`Review ${offer.count} like plans`, SLACK_LIMITS.buttonText),
    value: JSON.stringify({ like: offer.like }),
  }));
}

/** Shown at once on a click, while the batch is opened: Slack's trigger lasts 3 s, reading the plans may take longer. */
export function batchOpeningView(): View {
  return modal({ title: "Like plans", blocks: [section("Opening the plans alike to this one…")] });
}

/** Why a batch could not be opened or decided, in Countersign's own words (mrkdwn already). */
export function batchNoticeView(text: string): View {
  return modal({ title: "Like plans", blocks: [section(text)] });
}

/** The batch: every plan it holds, at the version it binds to; Approve-all submits, Reject-all asks for one reason. */
export function batchView(batch: BatchView): View {
  const plans = batch.plans.slice(0, SLACK_BATCH_PLANS);
  const count = plans.length === 1 ? "1 plan" : `${plans.length} like plans`;
  const blocks: Block[] = [
    section(
      `*${count}* from ${inlineCode(singleLine(batch.agent), SHOWN.agent)}: ${mrkdwnText(singleLine(batch.alike), SHOWN.alike)}\n` +
        `Each plan is decided by itself, at the version shown here. You may decide through this batch until ${slackDate(batch.expiresAt)}.`,
    ),
  ];
  // The browser's batch holds more: opened from the oldest of these, it shows them and the ones after.
  if (batch.more > 0 && plans[0])
    blocks.push(
      context(
        `${batch.more} more alike ${batch.more === 1 ? "plan waits" : "plans wait"} for you than this batch holds: <${plans[0].reviewUrl}/alike|review up to 50 in the browser>.`,
      ),
    );
  for (const plan of plans) blocks.push({ type: "divider" }, section(planText(plan)));
  blocks.push(
    { type: "divider" },
    {
      type: "actions",
      elements: [
        {
          type: "button",
          action_id: BATCH_IDS.rejectButton,
          style: "danger",
          text: plainText(`Reject all ${plans.length}…`, SLACK_LIMITS.buttonText),
          value: JSON.stringify({ batchId: batch.id, count: plans.length }),
        },
        { type: "button", action_id: "view_full_plan", text: plainText("Open in the browser", SLACK_LIMITS.buttonText), url: batch.url },
      ],
    },
  );
  return modal({
    title: "Review like plans",
    callbackId: BATCH_IDS.approve,
    meta: { batchId: batch.id } satisfies BatchModalMeta,
    submit: `Approve all ${plans.length}`,
    close: "Cancel",
    blocks,
  });
}

/** The one reason for every plan of the batch. */
export function batchRejectView(meta: BatchRejectMeta, count: number): View {
  return modal({
    title: "Reject like plans",
    callbackId: BATCH_IDS.reject,
    meta,
    submit: `Reject all ${count}`,
    close: "Back",
    blocks: [
      {
        type: "input",
        block_id: BATCH_IDS.reason,
        label: plainText(`Why are you rejecting these ${count} plans?`, 2000),
        hint: plainText("Every plan's agent and requester see this reason.", 2000),
        element: { type: "plain_text_input", action_id: BATCH_IDS.reason, multiline: true, max_length: MAX_STATED_REASON_CHARS },
      },
    ],
  });
}

/** Shown as the submission's ack, while the plans are decided one by one. */
export function batchWorkingView(verdict: "approve" | "reject"): View {
  return modal({
    title: "Like plans",
    close: "Close",
    blocks: [section(`${verdict === "approve" ? "Approving" : "Rejecting"} each plan of the batch… This view shows what became of each one when done.`)],
  });
}

/** What became of each plan: approved, approval counted (n of m), rejected, or refused with its code. */
export function batchDecidedView(decision: BatchDecision): View {
  const tally = tallyOf(decision);
  const lines = decision.outcomes.map(
    (o) => `${resultText(o.result)} — *${mrkdwnText(singleLine(o.title), SHOWN.resultTitle)}* ${inlineCode(shortHash(o.hash), 14)}`,
  );
  const blocks: Block[] = [section(`*${tally}*`)];
  let chunk: string[] = [];
  const flush = () => {
    if (chunk.length > 0) blocks.push(section(chunk.join("\n")));
    chunk = [];
  };
  for (const line of lines) {
    if ([...chunk, line].join("\n").length > SLACK_LIMITS.sectionText) flush();
    chunk.push(line);
  }
  flush();
  const rechecks = decision.outcomes.filter((o) => o.recheckFailed).length;
  if (rechecks > 0)
    blocks.push(
      context(
        `${rechecks} approval(s) were recorded although their targets could not be re-read at the click; the executor re-checks before writing anything.`,
      ),
    );
  return modal({ title: decision.verdict === "approve" ? "Approved like plans" : "Rejected like plans", close: "Done", blocks: blocks.slice(0, VIEW.blocks) });
}

/** "9 approved · 3 refused": the batch's answer in one line. */
export function tallyOf(decision: BatchDecision): string {
  const counts = new Map<string, number>();
  for (const o of decision.outcomes) {
    const word = o.result.kind === "counted" ? "approval counted" : o.result.kind;
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts].map(([word, n]) => `${n} ${word}`).join(" · ") || "nothing to decide";
}

/** One plan's result as a short mrkdwn phrase; a refusal names its code. */
export function resultText(result: BatchPlanResult): string {
  switch (result.kind) {
    case "approved":
      return "✅ approved";
    case "counted":
      return `☑️ approval counted (${result.approvals} of ${result.requiredApprovals})`;
    case "rejected":
      return "🚫 rejected";
    case "refused":
      return `⛔ refused \`${result.code}\`: ${REFUSED[result.code] ?? mrkdwnText(singleLine(result.message), SHOWN.message)}${result.code === "already_decided" && result.status ? ` (${mrkdwnText(result.status, 20)})` : ""}`;
    case "failed":
      return `⚠️ not decided: ${mrkdwnText(singleLine(result.message), SHOWN.message)}`;
  }
}

/** Refusals a person reads often, in a few words; the rest show the service's own message. */
const REFUSED: Partial<Record<string, string>> = {
  plan_expired: "it expired",
  already_decided: "it is already decided",
  hash_mismatch: "it changed since it was shown",
  self_approval: "it was requested on your behalf, or you edited it or asked for it",
  not_an_approver: "you are not one of its approvers",
  already_voted: "you already approved it",
  target_changed: "its target changed since the preview; it is stale now",
  approver_check_failed: "Slack could not confirm your user groups",
  not_found: "it no longer exists",
};

function planText(plan: BatchPlan): string {
  const risk = plan.risk && plan.risk !== "low" ? ` · *${plan.risk.toUpperCase()} risk*` : "";
  const expires = plan.expiresAt ? ` · expires ${slackDate(plan.expiresAt)}` : "";
  const head = `*${mrkdwnText(singleLine(plan.title), SHOWN.title)}* ${inlineCode(shortHash(plan.hash), 14)}${risk}${expires} · <${plan.reviewUrl}|open>`;
  const actions = plan.actions.slice(0, SHOWN.actionsPerPlan).map((a) => {
    const where = `${inlineCode(singleLine(a.target), SHOWN.target)} ${inlineCode(singleLine(a.op), 20)} ${inlineCode(singleLine(a.path), SHOWN.path)}`;
    const changes = a.changes.slice(0, SHOWN.changesPerAction).map(changeLine);
    const hidden = a.changes.length - changes.length;
    if (a.changes.length === 0) changes.push("_No field changes._");
    if (hidden > 0) changes.push(`_… ${hidden} more — open the plan_`);
    return [where, ...changes].join("\n");
  });
  const moreActions = plan.actions.length - actions.length;
  const tail = moreActions > 0 ? [`_… ${moreActions} more actions — open the plan_`] : [];
  return [head, ...actions, ...tail].join("\n");
}

function changeLine(change: Change): string {
  const path = change.path === "" ? "_whole resource_" : inlineCode(change.path, SHOWN.path);
  return `• ${path}: ${value(change.from)} → ${value(change.to)}`;
}

function value(v: Json | undefined): string {
  return v === undefined ? "_absent_" : inlineCode(JSON.stringify(v), SHOWN.value);
}

function modal(parts: { title: string; blocks: Block[]; callbackId?: string; meta?: object; submit?: string; close?: string }): View {
  return {
    type: "modal",
    ...(parts.callbackId ? { callback_id: parts.callbackId } : {}),
    ...(parts.meta ? { private_metadata: JSON.stringify(parts.meta) } : {}),
    title: plainText(parts.title, VIEW.title),
    ...(parts.submit ? { submit: plainText(parts.submit, VIEW.button) } : {}),
    close: plainText(parts.close ?? "Close", VIEW.button),
    blocks: parts.blocks,
    // Our blocks are loosely typed on purpose (plan-message.ts Block); the tests and the emulator pin their shapes.
  } as unknown as View;
}

function section(text: string): Block {
  return { type: "section", text: mrkdwn(text, SLACK_LIMITS.sectionText) };
}

function context(text: string): Block {
  return { type: "context", elements: [mrkdwn(text, SLACK_LIMITS.contextText)] };
}
