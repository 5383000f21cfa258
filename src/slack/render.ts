/**
 * Block Kit for the review channel: the preview message (`renderPlanMessage`) and one thread
 * reply per lifecycle event (`renderThreadReply`). Pure: the outbox and the click handlers post
 * what these return.
 *
 * Two promises hold for any input (20 actions, 500 changed fields, 100 KB strings, any Unicode):
 * every agent-supplied string shows literally (see escape.ts), and every message is within
 * Slack's limits — what does not fit is counted in a "… N more … — see full plan" marker, and
 * the decision buttons and the link to the full plan always fit.
 */
import type { Change } from "../plan/changes.ts";
import { weakPrecondition } from "../plan/weak-precondition.ts";
import { shortHash } from "../plan/fingerprint.ts";
import type { Json } from "../plan/json.ts";
import type { ActionOutcome, Outcome } from "../plan/outcome.ts";
import type { ActionPreview } from "../contract/agent-api.ts";
import { inlineCode, mention, mrkdwn, mrkdwnText, mrkdwnWithCode, plainText, singleLine, slackDate, truncate, type Mrkdwn, type PlainText } from "./escape.ts";
import type { Block, PlanMessage, SlackMessage, ThreadEvent } from "./plan-message.ts";

/** Slack's Block Kit limits; past any of them `chat.postMessage` answers `invalid_blocks`. */
export const SLACK_LIMITS = {
  blocks: 50,
  sectionText: 3000,
  sectionFields: 10,
  fieldText: 2000,
  headerText: 150,
  contextElements: 10,
  contextText: 3000,
  actionsElements: 25,
  buttonText: 75,
  buttonValue: 2000,
  buttonUrl: 3000,
  confirmTitle: 100,
  confirmText: 300,
  confirmButton: 30,
  /** Slack cuts the fallback at 40,000; ours is a notification line and stays far shorter. */
  messageText: 3000,
} as const;

/**
 * Slack also refuses a message whose blocks are too big in total (`msg_blocks_too_long`). That
 * limit is undocumented: reported at about 13,300 characters of block text
 * (https://github.com/slackapi/bolt-js/issues/2509, where a Slack engineer puts it as "12,000
 * text characters with a buffer for block containers"), and once below 12,000
 * (https://github.com/slackapi/bolt-js/issues/2867). We measure the serialised blocks — text, structure and JSON
 * escaping — and stay under this, which leaves a margin whichever way Slack counts.
 */
export const BLOCKS_JSON_BUDGET = 10_000;

/**
 * How much of a plan the preview shows at most. Slack would allow more; a reviewer reads less.
 * The full plan is one click away, and the approval binds the full hash whatever is shown.
 */
const SHOWN = {
  actions: 20,
  changeLinesTotal: 40,
  changeLinesPerAction: 15,
  changeLinesPerActionInThread: 5,
  mentions: 15,
  title: 150,
  agent: 200,
  environment: 100,
  reason: 800,
  rejection: 500,
  replyReason: 2000,
  target: 100,
  op: 20,
  path: 300,
  version: 200,
  changePath: 120,
  value: 160,
  detail: 500,
  /** JSON characters of a re-plan's "Changed since" section. */
  replanText: 1500,
} as const;

/** Below this many JSON characters an action section cannot show its heading and a marker. */
const MIN_ACTION_ROOM = 320;
/** Room kept at the end of a section for its "… N more changes" line. */
const MARKER_ROOM = 60;

// ------------------------------------------------------------------------------- the preview

export function renderPlanMessage(m: PlanMessage): SlackMessage {
  const head: Block[] = [titleBlock(m), aboutBlock(m), ...reasonBlocks(m), ...changedSinceBlocks(m), statusBlock(m), { type: "divider" }];
  const tail: Block[] = [decisionBlock(m)];
  const body = actionBlocks(m.actions, {
    room: BLOCKS_JSON_BUDGET - jsonSize([...head, ...tail]) - MARKER_BLOCK_ROOM,
    maxBlocks: SLACK_LIMITS.blocks - head.length - tail.length - 1, // 1: the "more actions" marker
    maxLinesEach: SHOWN.changeLinesPerAction,
    withVersion: true,
  });
  return { text: previewFallback(m), blocks: [...head, ...body, ...tail] };
}

function previewFallback(m: PlanMessage): string {
  const lead = m.status === "pending" ? "Plan awaiting approval" : `Plan ${STATUS_WORD[m.status]}`;
  return truncate(`${lead}: ${mrkdwnText(singleLine(m.title), SHOWN.title * 2)}`, SLACK_LIMITS.messageText);
}

const STATUS_WORD: Record<PlanMessage["status"], string> = {
  pending: "pending",
  approved: "approved",
  rejected: "rejected",
  expired: "expired",
  cancelled: "cancelled",
  executing: "executing",
  applied: "applied",
  failed: "failed",
  stale: "stale",
  superseded: "superseded",
  revoked: "revoked",
};

function titleBlock(m: PlanMessage): Block {
  return { type: "header", text: plainText(singleLine(m.title), SLACK_LIMITS.headerText) };
}

/** Who asked, for whom, where, until when, and which exact version: one context line. */
function aboutBlock(m: PlanMessage): Block {
  const elements: (PlainText | Mrkdwn)[] = [plainText(`Agent: ${singleLine(m.agent)}`, SHOWN.agent)];
  if (m.onBehalfOf !== undefined) elements.push(contextMrkdwn(`on behalf of ${mention(m.onBehalfOf)}`));
  if (m.editedBy !== undefined) elements.push(contextMrkdwn(`✏️ values edited by ${mention(m.editedBy)}`));
  if (m.undoes !== undefined)
    elements.push(contextMrkdwn(`↩️ Undoes ${versionLink(m.undoes)}${m.askedBy !== undefined ? `, asked by ${mention(m.askedBy)}` : ""}`));
  elements.push(plainText(`Environment: ${singleLine(m.environment)}`, SHOWN.environment));
  if (m.risk) elements.push(plainText(`Risk: ${m.risk.level.toUpperCase()} (${singleLine(m.risk.rule)})`, 150));
  if (m.status === "pending" || m.status === "expired") {
    elements.push(contextMrkdwn(`${m.status === "pending" ? "Expires" : "Expired"} ${slackDate(m.expiresAt)}`));
  }
  elements.push(contextMrkdwn(`Plan ${inlineCode(shortHash(m.hash), 14)}`));
  if ((m.status === "pending" || m.status === "approved") && m.watch?.failingSince) {
    elements.push(contextMrkdwn(`⚠️ Could not re-check the target since ${slackDate(m.watch.failingSince, "{time}")}; the executor re-checks before writing`));
  }
  return { type: "context", elements };
}

/** The reason is prose: `plain_text` shows it exactly, line breaks included. */
function reasonBlocks(m: PlanMessage): Block[] {
  if (m.reason === undefined || m.reason.trim() === "") return [];
  return [{ type: "section", text: plainText(`Reason: ${m.reason}`, SHOWN.reason) }];
}

function statusBlock(m: PlanMessage): Block {
  return section(statusLine(m) + uncheckedLine(m) + (m.undoneBy ? `\n↩️ Taken back by ${versionLink(m.undoneBy)}` : ""));
}

function statusLine(m: PlanMessage): string {
  const approvers = m.approvals.map((a) => a.userId);
  const actedFor = actedForOf(m.approvals);
  const approvedBy = approvers.length > 0 ? ` — approved${byWhom(approvers, actedFor)}` : "";
  switch (m.status) {
    case "pending":
      return pendingLine(m, approvers, actedFor);
    case "approved":
      return `✅ *Approved*${byWhom(approvers, actedFor)} — handed to the executor`;
    case "rejected":
      return m.rejection
        ? `🚫 *Rejected* by ${personFor(m.rejection.userId, m.rejection.for)}: ${mrkdwnText(singleLine(m.rejection.reason), SHOWN.rejection)}`
        : "🚫 *Rejected*";
    case "expired":
      return `⌛ *Expired* — ${m.outcome?.reason ? mrkdwnWithCode(singleLine(m.outcome.reason), SHOWN.reason) : "nobody decided in time"}`;
    case "cancelled":
      return "✖️ *Cancelled* by the agent";
    case "executing":
      return `⚙️ *Executing…*${approvedBy}`;
    case "applied":
      if (m.outcome && driftedWrites(m.outcome) > 0)
        return `⚠️ *Applied, not as previewed* — ${driftedText(driftedWrites(m.outcome))}; see the thread${approvedBy}`;
      return `✅ *Applied*${m.outcome?.reconciled ? " (the target already held these changes)" : ""}${approvedBy}`;
    case "failed":
      return `❌ *Failed* — ${failureReason(m.outcome)}${m.outcome?.partial ? `\n${PARTIAL_NOTE}` : ""}`;
    case "stale":
      return `⚠️ *Stale* — target changed, resubmit${staleChange(m.outcome)}${m.supersededBy ? `\n↪️ Replaced by ${versionLink(m.supersededBy)}` : ""}`;
    case "superseded":
      return m.supersededBy
        ? `↪️ *Superseded* by ${versionLink(m.supersededBy)}${m.supersededBy.editedBy ? `, edited by ${mention(m.supersededBy.editedBy.userId)}` : ""} — decide on that one`
        : "↪️ *Superseded* — the agent sent a new version";
    case "revoked":
      return m.revocation
        ? `⛔ *Revoked* by ${personFor(m.revocation.userId, m.revocation.for)}: ${mrkdwnText(singleLine(m.revocation.reason), SHOWN.rejection)} — the approval was withdrawn before any executor took it`
        : "⛔ *Revoked* — the approval was withdrawn before any executor took it";
  }
}

/**
 * What changed since the preview, said on the message itself: the first changed field
 * of the first stale action, "`/email` is now `b@…`, was `a@…` when you were asked". The values
 * come from the reviewer's view, masked as previews are; the thread reply lists the rest.
 */
function staleChange(outcome: Outcome | undefined): string {
  const stale = outcome?.actions.filter((a) => a.status === "stale") ?? [];
  const changes = stale.flatMap((a) => a.changedSincePreview ?? []);
  const first = changes[0];
  if (!first) return "";
  const value = (v: unknown) => (v === undefined ? "_absent_" : inlineCode(JSON.stringify(v), SHOWN.value));
  const more = changes.length > 1 ? ` (and ${changes.length - 1} more change${changes.length > 2 ? "s" : ""})` : "";
  return `\n${inlineCode(first.path || "/", SHOWN.changePath)} is now ${value(first.to)}, was ${value(first.from)} when you were asked${more}`;
}

/** Approvals recorded although the targets could not be re-read at the click: said, not hidden. */
function uncheckedLine(m: PlanMessage): string {
  const unchecked = m.approvals.filter((a) => a.recheckFailed).map((a) => a.userId);
  if (unchecked.length === 0 || !["pending", "approved", "executing"].includes(m.status)) return "";
  return `\n⚠️ Approved without a re-check by ${mentions(unchecked)}: the target could not be read at the click (could not re-check); the executor re-checks before writing`;
}

function pendingLine(m: PlanMessage, approvers: string[], actedFor: Record<string, string>): string {
  const { requiredApprovals, approvers: eligible } = m.policy;
  const rule = m.policy.rule ? ` (rule ${inlineCode(m.policy.rule, 80)})` : "";
  const needs = `⏳ *Pending* — needs ${requiredApprovals} of: ${eligible.length > 0 ? mentions(eligible) : "_no approver configured_"}${rule}`;
  if (approvers.length === 0) return needs;
  return `${needs}\nApproved so far (${approvers.length} of ${requiredApprovals}): ${mentions(approvers, actedFor)}`;
}

function byWhom(userIds: string[], actedFor: Record<string, string> = {}): string {
  return userIds.length > 0 ? ` by ${mentions(userIds, actedFor)}` : "";
}

/** Approver → the person they acted for, where one did. */
function actedForOf(approvals: readonly { userId: string; for?: string | undefined }[]): Record<string, string> {
  return Object.fromEntries(approvals.flatMap((a) => (a.for ? [[a.userId, a.for]] : [])));
}

/** A person, and whom they acted for through a delegation: "@bob for @alice". */
function personFor(userId: string, forUser: string | undefined): string {
  return forUser ? `${mention(userId)} for ${mention(forUser)}` : mention(userId);
}

/** Mentions of people the policy names (each with whom they acted for), capped so a long list cannot crowd out the plan. */
function mentions(userIds: string[], actedFor: Record<string, string> = {}): string {
  const shown = userIds
    .slice(0, SHOWN.mentions)
    .map((id) => personFor(id, Object.hasOwn(actedFor, id) ? actedFor[id] : undefined))
    .join(" ");
  const hidden = userIds.length - SHOWN.mentions;
  return hidden > 0 ? `${shown} and ${hidden} more` : shown;
}

/**
 * Approve (with a confirm dialog) and Reject while the plan is pending, and always the link to
 * the full plan. Built before the action sections and placed last, so it always fits.
 */
function decisionBlock(m: PlanMessage): Block {
  const buttons =
    m.status === "pending"
      ? [...decisionButtons(m), ...(m.editable ? [editButton(m)] : [])]
      : m.status === "approved"
        ? [revokeButton(m)]
        : m.undoable
          ? [undoButton(m)]
          : [];
  return { type: "actions", elements: [...buttons, viewButton(m)] };
}

/** While an approved plan waits for an executor, its approval can be withdrawn; the modal asks why (its confirmation). */
function revokeButton(m: ButtonPlan): Block {
  return { type: "button", action_id: "revoke", style: "danger", text: plainText("Revoke", SLACK_LIMITS.buttonText), value: buttonValue(m) };
}

/** Propose undo asks for a new plan that takes this one back; its confirm dialog says it goes to review. */
function undoButton(m: ButtonPlan): Block {
  return {
    type: "button",
    action_id: "propose_undo",
    text: plainText("Propose undo", SLACK_LIMITS.buttonText),
    value: buttonValue(m),
    confirm: {
      title: plainText("Propose an undo?", SLACK_LIMITS.confirmTitle),
      text: plainText(
        `A new plan that restores what plan ${shortHash(m.hash)} changed goes to review. Someone else approves it: you will be its requester.`,
        SLACK_LIMITS.confirmText,
      ),
      confirm: plainText("Propose undo", SLACK_LIMITS.confirmButton),
      deny: plainText("Cancel", SLACK_LIMITS.confirmButton),
    },
  };
}

/** Edit opens a dialog of the plan's values; what it saves is a new version, so it binds to this hash like Approve. */
function editButton(m: ButtonPlan): Block {
  return { type: "button", action_id: "edit", text: plainText("Edit", SLACK_LIMITS.buttonText), value: buttonValue(m) };
}

/** What the decision buttons need of a plan: which one, its exact hash, and the targets its confirm dialog names. */
export type ButtonPlan = Pick<PlanMessage, "planId" | "hash"> & { actions: readonly Pick<ActionPreview, "target">[] };

/**
 * Approve and Reject for a pending plan, exactly as on the preview (same action ids, same value):
 * other surfaces (App Home) show these, so the same listeners decide on them.
 */
export function decisionButtons(m: ButtonPlan): Block[] {
  return [approveButton(m), rejectButton(m)];
}

function approveButton(m: ButtonPlan): Block {
  return {
    type: "button",
    action_id: "approve",
    style: "primary",
    text: plainText("Approve", SLACK_LIMITS.buttonText),
    value: buttonValue(m),
    confirm: {
      title: plainText("Approve this plan?", SLACK_LIMITS.confirmTitle),
      text: plainText(confirmText(m), SLACK_LIMITS.confirmText),
      confirm: plainText("Approve", SLACK_LIMITS.confirmButton),
      deny: plainText("Cancel", SLACK_LIMITS.confirmButton),
    },
  };
}

/** No confirm dialog: Reject opens a modal asking for the reason, which is its confirmation. */
function rejectButton(m: ButtonPlan): Block {
  return {
    type: "button",
    action_id: "reject",
    style: "danger",
    text: plainText("Reject", SLACK_LIMITS.buttonText),
    value: buttonValue(m),
  };
}

export function viewButton(m: Pick<PlanMessage, "reviewUrl">): Block {
  const button: Block = { type: "button", action_id: "view_full_plan", text: plainText("View full plan", SLACK_LIMITS.buttonText) };
  // Our own PUBLIC_URL; a cut URL would lead somewhere else, so an oversized one is left out.
  if (m.reviewUrl.length <= SLACK_LIMITS.buttonUrl) button.url = m.reviewUrl;
  return button;
}

/**
 * What a click carries back: the handler passes exactly this hash to `decide`. It is never
 * shortened — a cut hash would bind nothing — so an oversized one is a bug upstream, not input.
 */
function buttonValue(m: ButtonPlan): string {
  const value = JSON.stringify({ planId: m.planId, hash: m.hash });
  if (value.length > SLACK_LIMITS.buttonValue)
    throw new RangeError(`button value for plan ${m.planId.slice(0, 64)} exceeds ${SLACK_LIMITS.buttonValue} characters`);
  return value;
}

/** The short hash comes first, so however many targets there are, truncation never hides it. */
function confirmText(m: ButtonPlan): string {
  const targets = [...new Set(m.actions.map((a) => singleLine(a.target)))];
  const count = m.actions.length === 1 ? "1 action" : `${m.actions.length} actions`;
  return `Approve plan ${shortHash(m.hash)}? ${count} on ${targets.join(", ") || "no target"}. Your approval binds to exactly this version.`;
}

// ---------------------------------------------------------------------------- action sections

interface ActionListing {
  /** JSON characters the sections (and their marker) may take together. */
  room: number;
  maxBlocks: number;
  maxLinesEach: number;
  withVersion: boolean;
  /** What happened to the action at this index, for the thread's account of an application. */
  result?: (index: number) => string;
}

/**
 * One section per action. The room is shared out evenly, and field widths shrink with each
 * action's share, so 20 actions all show their target and path; what still does not fit is
 * counted in a marker, never silently dropped.
 */
function actionBlocks(actions: ActionPreview[], listing: ActionListing): Block[] {
  const count = Math.max(0, Math.min(actions.length, SHOWN.actions, listing.maxBlocks, Math.floor(listing.room / MIN_ACTION_ROOM)));
  const each = Math.min(SLACK_LIMITS.sectionText, Math.floor(listing.room / Math.max(1, count)) - SECTION_OVERHEAD - 1);
  const linesEach = changeLinesPerAction(count, listing.maxLinesEach);
  const blocks = actions.slice(0, count).map((action, i) => section(actionText(action, i, actions.length, each, linesEach, listing)));
  const hidden = actions.length - count;
  if (hidden > 0) blocks.push(marker(`… ${hidden} more ${hidden === 1 ? "action" : "actions"} — see full plan`));
  return blocks;
}

function changeLinesPerAction(actionCount: number, max: number): number {
  if (actionCount === 0) return 0;
  return Math.max(1, Math.min(max, Math.floor(SHOWN.changeLinesTotal / actionCount)));
}

/** How many characters each shown value may take. */
interface Widths {
  target: number;
  path: number;
  version: number;
  changePath: number;
  value: number;
}

/** Widths for a section of `room` JSON characters: shares of it, halved because JSON escaping may double a quote. */
function widthsFor(room: number): Widths {
  const share = (fraction: number, min: number, max: number) => Math.max(min, Math.min(max, Math.floor((room * fraction) / 2)));
  return {
    target: share(1 / 8, 12, SHOWN.target),
    path: share(1 / 4, 16, SHOWN.path),
    version: share(1 / 6, 12, SHOWN.version),
    changePath: share(1 / 6, 12, SHOWN.changePath),
    value: share(1 / 5, 12, SHOWN.value),
  };
}

function actionText(action: ActionPreview, index: number, total: number, room: number, maxLines: number, listing: ActionListing): string {
  const widths = widthsFor(room);
  const result = listing.result?.(index);
  const heading = actionHeading(action, index, total, widths) + (result ? ` — ${result}` : "");
  const head = listing.withVersion ? `${heading}\n${versionLine(action, widths)}` : heading;
  return [head, ...changeLines(action.changes, room - weight(head) - 1, maxLines, widths)].join("\n");
}

function actionHeading(action: ActionPreview, index: number, total: number, widths: Widths): string {
  return `*${index + 1}/${total}* ${inlineCode(action.op, SHOWN.op)} on ${inlineCode(singleLine(action.target), widths.target)} ${inlineCode(action.path, widths.path)}`;
}

function versionLine(action: Pick<ActionPreview, "version" | "precondition">, widths: Widths): string {
  if (action.precondition === "digest") return "Version read: _none given — checked by digest of the state read (⚠ weaker than an ETag)_";
  if (action.version === null) return "Version read: _none — the resource did not exist_";
  const weak = weakPrecondition(action.precondition);
  return `Version read: ${inlineCode(action.version, widths.version)}${weak ? ` _(⚠ ${weak.label}: ${weak.why})_` : ""}`;
}

/** As many `path: before → after` lines as fit in `room` JSON characters, then the marker. */
function changeLines(changes: Change[], room: number, maxLines: number, widths: Widths): string[] {
  if (changes.length === 0) return ["_No field changes._"];
  const lines: string[] = [];
  let used = 0;
  for (const change of changes.slice(0, maxLines)) {
    const line = changeLine(change, widths);
    if (used + weight(line) + 1 > room - MARKER_ROOM) break;
    lines.push(line);
    used += weight(line) + 1;
  }
  const hidden = changes.length - lines.length;
  if (hidden > 0) lines.push(`_… ${hidden} more ${hidden === 1 ? "change" : "changes"} — see full plan_`);
  return lines;
}

function changeLine(change: Change, widths: Widths): string {
  return `• ${changePath(change.path, widths)}: ${jsonValue(change.from, widths)} → ${jsonValue(change.to, widths)}`;
}

/** The empty JSON Pointer is the document itself (a create or a delete), which "" would not say. */
function changePath(pointer: string, widths: Widths): string {
  return pointer === "" ? "_whole resource_" : inlineCode(pointer, widths.changePath);
}

/** `undefined` is a field that is absent, which is not the same as JSON `null`. */
function jsonValue(value: Json | undefined, widths: Widths): string {
  return value === undefined ? "_absent_" : inlineCode(JSON.stringify(value), widths.value);
}

// ------------------------------------------------------------------------------ re-plans

/** Our own PUBLIC_URL with a hash: nothing agent-supplied, so a plain mrkdwn link. */
function versionLink(v: { hash: string; reviewUrl: string }): string {
  return `<${v.reviewUrl}|version ${shortHash(v.hash)}>`;
}

/**
 * "Changed since version <short hash>" on a re-plan's preview: what was added, removed and
 * changed (each changed action's old → new after-state, masked as previews are). Bounded to one
 * section of SHOWN.replanText, so the actions below keep their room; the rest is on the page.
 */
function changedSinceBlocks(m: PlanMessage): Block[] {
  const d = m.changedSince;
  if (!d) return [];
  const widths = widthsFor(SHOWN.replanText / 2);
  const ref = (a: { op: string; target: string; path: string }) =>
    `${inlineCode(a.op, SHOWN.op)} on ${inlineCode(singleLine(a.target), widths.target)} ${inlineCode(a.path, widths.path)}`;
  const lines = [
    ...d.added.map((a) => `➕ added ${ref(a)}`),
    ...d.removed.map((a) => `➖ removed ${ref(a)}`),
    ...d.changed.flatMap((a) => [
      `✏️ changed ${ref(a)}${a.wasOp ? ` (was ${inlineCode(a.wasOp, SHOWN.op)})` : ""}`,
      ...a.changes.slice(0, SHOWN.changeLinesPerActionInThread).map((c) => `    ${changeLine(c, widths)}`),
      ...(a.changes.length > SHOWN.changeLinesPerActionInThread
        ? [`    _… ${a.changes.length - SHOWN.changeLinesPerActionInThread} more — see full plan_`]
        : []),
    ]),
  ];
  const head = `🔁 *Changed since version ${inlineCode(shortHash(d.since.hash), 14)}*${d.unchanged > 0 ? ` — ${d.unchanged} action${d.unchanged === 1 ? "" : "s"} unchanged` : ""}`;
  const shown: string[] = [head];
  let used = weight(head);
  for (const line of lines.length > 0 ? lines : ["_Nothing a reviewer sees changed: the same writes again._"]) {
    if (used + weight(line) + 1 > SHOWN.replanText - MARKER_ROOM) {
      shown.push(`_… ${lines.length - (shown.length - 1)} more lines — see full plan_`);
      break;
    }
    shown.push(line);
    used += weight(line) + 1;
  }
  return [section(shown.join("\n"))];
}

// ------------------------------------------------------------------------------ thread replies

export function renderThreadReply(e: ThreadEvent): SlackMessage {
  switch (e.type) {
    case "decision.approve":
      return reply(`👍 Approval ${e.approvals} of ${e.requiredApprovals} by ${personFor(e.userId, e.for)}`);
    case "plan.approved":
      return reply(`✅ Approved${byWhom(e.approvers, e.actedFor)} — handed to the executor`);
    case "plan.rejected":
      return reply(`🚫 Rejected by ${personFor(e.userId, e.for)}: ${mrkdwnText(singleLine(e.reason), SHOWN.replyReason)}`);
    case "plan.expired":
      return reply(`⌛ Expired — ${e.reason ? mrkdwnWithCode(singleLine(e.reason), SHOWN.replyReason) : "nobody decided in time"}`);
    case "plan.cancelled":
      return reply(`✖️ Cancelled by the agent (${mrkdwnText(singleLine(e.agent), SHOWN.agent)})`);
    case "plan.executing":
      return reply("⚙️ Executing…");
    case "plan.reclaimed":
      return reply(`🔁 Taken over by another executor (claim ${e.claim})`);
    case "plan.reminder": {
      // A reminder exists to reach people: approvers are mentioned, groups too (that is the point),
      // and in place of someone away, whoever decides for them.
      const standsIn = (a: string) => e.delegated?.filter((d) => d.userId === a).map((d) => d.for) ?? [];
      const who = e.missing
        .map((a) =>
          /^S[A-Z0-9]{2,}$/.test(a) ? `<!subteam^${a}>` : standsIn(a).length > 0 ? `${mention(a)} (for ${standsIn(a).map(mention).join(", ")})` : mention(a),
        )
        .join(" ");
      return reply(`⏰ Still waiting: ${e.approvals} of ${e.requiredApprovals} approval(s); expires ${slackDate(e.expiresAt)}. ${who}`.trim());
    }
    case "plan.applied":
      return appliedReply(e.outcome, e.actions);
    case "plan.failed":
      return failedReply(e.outcome);
    case "plan.stale":
      return staleReply(e.outcome);
    case "plan.revoked":
      return reply(`⛔ Revoked by ${personFor(e.userId, e.for)}: ${mrkdwnText(singleLine(e.reason), SHOWN.replyReason)}`);
    case "plan.superseded": {
      const lead = e.editedBy
        ? `✏️ Values edited by ${mention(e.editedBy)}: ${versionLink(e.newer)} replaces this version`
        : `↪️ Replaced by ${versionLink(e.newer)}`;
      const again =
        e.approvers.length > 0
          ? `\n${mentions(e.approvers)}: your approval was for this version and does not carry over; approve the new one if it still has your agreement.`
          : "";
      return reply(lead + again);
    }
    case "undo.proposed": {
      const who = e.askedBy !== undefined ? mention(e.askedBy) : `the agent (${mrkdwnText(singleLine(e.agent ?? ""), SHOWN.agent)})`;
      return reply(`↩️ Undo proposed by ${who}: ${versionLink(e.undo)} restores what this plan changed, once approved`);
    }
    case "undo.applied":
      return reply(`↩️ Taken back: ${versionLink(e.undo)} was applied, and the target holds what it held before this plan`);
    case "plan.no_executor": {
      const seen = e.lastSeenAt ? `none has asked for work since ${slackDate(e.lastSeenAt)}` : "none has asked for work yet";
      const lapses = e.grantExpiresAt ? `; the approval lapses ${slackDate(e.grantExpiresAt)}` : "";
      return reply(`⏸️ Waiting for an executor: no executor is connected (${seen}), so nobody applies this plan until one does${lapses}`);
    }
  }
}

/**
 * A reply: a summary (also the notification text) and optional detail blocks. Agent, executor
 * and reviewer text in a summary is kept on one line, so it cannot forge a second line that
 * looks like one of ours ("✅ Approved by …").
 */
function reply(summary: string, details: Block[] = []): SlackMessage {
  return { text: truncate(summary, SLACK_LIMITS.messageText), blocks: [section(summary), ...details] };
}

/** JSON characters left for details under a summary, keeping room for a marker. */
function roomUnder(summary: string): number {
  return BLOCKS_JSON_BUDGET - jsonSize([section(summary)]) - MARKER_BLOCK_ROOM;
}

/** Detail sections in order while they fit; the rest counted in a marker. */
function detailSections(details: string[], room: number): Block[] {
  const blocks: Block[] = [];
  let used = 0;
  for (const detail of details) {
    const block = section(detail);
    const cost = jsonSize(block) + 1;
    if (blocks.length >= SLACK_LIMITS.blocks - 2 || used + cost > room) break;
    blocks.push(block);
    used += cost;
  }
  const hidden = details.length - blocks.length;
  if (hidden > 0) blocks.push(marker(`… ${hidden} more — see full plan`));
  return blocks;
}

function appliedReply(outcome: Outcome, actions: ActionPreview[]): SlackMessage {
  const written = outcome.actions.filter((a) => a.status === "applied" && !a.reconciled).length;
  const drifted = driftedWrites(outcome);
  const summary = outcome.reconciled
    ? "Applied ✅ — the target already held these changes; nothing was written"
    : drifted > 0
      ? `Applied ⚠️ — ${written} ${written === 1 ? "action" : "actions"} written, but ${driftedText(drifted)}: the target, re-read after the write, differs from what was approved`
      : `Applied ✅ — ${written} ${written === 1 ? "action" : "actions"} written`;
  // What did not land comes first: it is why this reply needs reading.
  const drift = detailSections(outcome.actions.filter((a) => a.verified === false).map(driftDetail), roomUnder(summary) / 2);
  const details = actionBlocks(actions, {
    room: roomUnder(summary) - jsonSize(drift),
    maxBlocks: SLACK_LIMITS.blocks - 2,
    maxLinesEach: SHOWN.changeLinesPerActionInThread,
    withVersion: false,
    result: (index) => actionResult(outcome.actions.find((a) => a.index === index)),
  });
  return reply(summary, [...drift, ...details]);
}

function actionResult(result: ActionOutcome | undefined): string {
  if (result === undefined) return "no result reported";
  if (result.reconciled) return "already held this change, nothing written";
  if (result.verified === false) return `${result.status}, ⚠️ not as previewed`;
  if (result.verified === null) return `${result.status}, not re-checked (the target could not be re-read after the write)`;
  return result.status;
}

/** Writes whose re-read differs from the preview (verify after apply). */
function driftedWrites(outcome: Outcome): number {
  return outcome.actions.filter((a) => a.verified === false).length;
}

function driftedText(drifted: number): string {
  return drifted === 1 ? "1 write did not land as approved" : `${drifted} writes did not land as approved`;
}

/** One write that did not land as approved: where, then each field as approved → as the target has it. */
function driftDetail(result: ActionOutcome): string {
  const heading = `⚠️ *${result.index + 1}.* ${inlineCode(singleLine(result.target), SHOWN.target)} ${inlineCode(result.path, SHOWN.path)} — re-read after the write (approved → target has):`;
  const changes = (result.driftAfterApply ?? []).map(
    (d): Change => ({ path: d.path, ...(d.expected !== undefined ? { from: d.expected } : {}), ...(d.actual !== undefined ? { to: d.actual } : {}) }),
  );
  if (changes.length === 0) return heading;
  return [heading, ...changeLines(changes, SLACK_LIMITS.sectionText - weight(heading) - 1, SHOWN.changeLinesPerActionInThread, THREAD_WIDTHS)].join("\n");
}

function failedReply(outcome: Outcome): SlackMessage {
  const summary = `Failed ❌ — ${failureReason(outcome)}${outcome.partial ? `\n${PARTIAL_NOTE}` : ""}`;
  return reply(summary, detailSections(outcome.actions.map(outcomeActionText), roomUnder(summary)));
}

const PARTIAL_NOTE = "⚠️ Partly applied: earlier actions were written, so the target holds part of the plan.";

function failureReason(outcome: Outcome | undefined): string {
  const reason = outcome?.reason ?? outcome?.actions.find((a) => a.status === "failed")?.detail;
  return reason ? mrkdwnWithCode(singleLine(reason), SHOWN.detail) : "the executor reported a failure";
}

function outcomeActionText(result: ActionOutcome): string {
  const where = `${inlineCode(singleLine(result.target), SHOWN.target)} ${inlineCode(result.path, SHOWN.path)}`;
  const detail = result.detail ? `: ${mrkdwnWithCode(singleLine(result.detail), SHOWN.detail)}` : "";
  return `*${result.index + 1}.* ${where} — ${result.reconciled ? "already held this change" : result.status}${detail}`;
}

function staleReply(outcome: Outcome): SlackMessage {
  const stale = outcome.actions.filter((a) => a.status === "stale");
  const [first, ...others] = stale;
  if (first === undefined) return reply("⚠️ Stale — the target changed since the preview; resubmit the plan");
  const more = others.length > 0 ? ` (and ${others.length} more)` : "";
  // One stale action is said in full by the summary; its details add only what changed.
  const summary = `⚠️ ${staleLine(first)}${more}`;
  const details = others.length === 0 ? changedSincePreview(first) : stale.map(staleDetail);
  return reply(summary, detailSections(details, roomUnder(summary)));
}

function changedSincePreview(result: ActionOutcome): string[] {
  const changes = result.changedSincePreview ?? [];
  if (changes.length === 0) return [];
  const heading = "Changed on the target since the preview:";
  return [[heading, ...changeLines(changes, SLACK_LIMITS.sectionText - weight(heading) - 1, SHOWN.changeLinesPerActionInThread, THREAD_WIDTHS)].join("\n")];
}

function staleLine(result: ActionOutcome): string {
  const where = `${inlineCode(singleLine(result.target), SHOWN.target)} ${inlineCode(result.path, SHOWN.path)}`;
  return `Stale — ${where} changed since the preview: expected ${versionText(result.expected)}, now ${versionText(result.now)}; resubmit the plan`;
}

/** Each stale action, with what changed on the target since the preview, as far as it fits. */
function staleDetail(result: ActionOutcome): string {
  const heading = staleLine(result);
  const changes = result.changedSincePreview ?? [];
  if (changes.length === 0) return heading;
  const room = SLACK_LIMITS.sectionText - weight(heading) - 1;
  return [heading, ...changeLines(changes, room, SHOWN.changeLinesPerActionInThread, THREAD_WIDTHS)].join("\n");
}

/** `null` is a resource that does not exist; missing is a version the executor did not learn. */
function versionText(version: string | null | undefined): string {
  if (version === null) return "_absent_";
  if (version === undefined) return "_unknown_";
  return inlineCode(version, SHOWN.version);
}

/** Stale details list a few changes each; the widths a whole section would give one action. */
const THREAD_WIDTHS = widthsFor(1000);

// ------------------------------------------------------------------------------ small builders

function section(text: string): Block {
  return { type: "section", text: mrkdwn(text, SLACK_LIMITS.sectionText) };
}

function marker(text: string): Block {
  return { type: "context", elements: [contextMrkdwn(text)] };
}

function contextMrkdwn(text: string): Mrkdwn {
  return mrkdwn(text, SLACK_LIMITS.contextText);
}

/** What a value adds to the request body: its JSON, escaping included. */
function jsonSize(value: unknown): number {
  return JSON.stringify(value).length;
}

/** What a string adds inside a JSON string: quotes, backslashes and control characters count double or more. */
function weight(text: string): number {
  return jsonSize(text) - 2;
}

const SECTION_OVERHEAD = jsonSize(section("x")) - 1;
const MARKER_BLOCK_ROOM = jsonSize(marker("… 99999 more actions — see full plan")) + 1;
