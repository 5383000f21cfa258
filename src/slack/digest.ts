/**
 * Digests: when a channel's queue would delay new previews past
 * `slack.digest.afterSeconds`, the waiting plans are shown as lines of ONE message instead of a
 * preview each — Slack's ~1 message a second per channel is then spent on making every plan
 * visible in time. Pure: which previews to digest (`previewsToDigest`), how many lines fit one
 * message (`digestCapacity`), the message (`renderDigest`) and a thread reply naming its plan
 * (`renderDigestReply`). The deliver sink (deliver.ts) does the I/O.
 *
 * A digest carries no Approve button: a line shows too little of a plan to approve it from
 * there, and the approval binds the hash of what the person saw. Each line links to the plan's
 * page, where Approve / Reject are; App Home lists the plan with the preview's own bound buttons.
 */
import type { DigestLine, WaitingPreview } from "../service/review/index.ts";
import { shortHash } from "../plan/fingerprint.ts";
import type { PlanStatus } from "../plan/status.ts";
import { inlineCode, mrkdwn, mrkdwnText, singleLine, slackDate, truncate } from "./escape.ts";
import type { Block, SlackMessage } from "./plan-message.ts";
import { BLOCKS_JSON_BUDGET, SLACK_LIMITS } from "./render.ts";
import { alikeButtons } from "./batch-modal.ts";
import { alikeOffers } from "../plan/alike.ts";

export interface DigestDecisionInput {
  /** Now, ms since the epoch. */
  now: number;
  /** How long until the channel may take its next post (its booked slot, a Retry-After hold); ≤ 0: now. */
  nextPostInMs: number;
  /** The channel's pace: ms between two posts. */
  spacingMs: number;
  /** `slack.digest.afterSeconds` in ms; 0 (or less) never digests. */
  afterMs: number;
  waiting: readonly WaitingPreview[];
}

/**
 * The plans to show in a digest now instead of their own previews, in lane order; empty when
 * every waiting preview would still be posted within `afterMs` of its submission. Posted one by
 * one, the i-th waiting preview would go out at now + nextPostInMs + i × spacingMs; if any of them
 * would then be later than `afterMs` after its plan was submitted, every waiting plan that is not
 * high-risk goes in the digest (one post for all of them). A digest of one plan would cost the
 * same post as its preview and show less, so it is never made.
 */
export function previewsToDigest(input: DigestDecisionInput): string[] {
  const { now, nextPostInMs, spacingMs, afterMs, waiting } = input;
  if (afterMs <= 0) return [];
  const start = now + Math.max(0, nextPostInMs);
  const late = waiting.some((w, i) => start + i * spacingMs - w.submittedAt > afterMs);
  if (!late) return [];
  const digested = waiting.filter((w) => !w.highRisk).map((w) => w.planId);
  return digested.length >= 2 ? digested : [];
}

/** At most this many plans in one digest, whatever fits: a reviewer scans a list, not a wall. */
export const DIGEST_MAX_LINES = 40;

const SHOWN = { title: 60, target: 40, op: 20 };

const STATUS_LABEL: Record<PlanStatus, string> = {
  pending: "⏳ pending",
  approved: "✅ approved",
  rejected: "🚫 rejected",
  expired: "⌛ expired",
  cancelled: "✖️ cancelled",
  executing: "⚙️ executing",
  applied: "✅ applied",
  failed: "❌ failed",
  stale: "⚠️ stale",
  superseded: "↪️ superseded",
  revoked: "⛔ revoked",
};

/** The status whose label is longest: a digest's size is measured with it, so an update (any status) still fits. */
const WIDEST_STATUS = (Object.keys(STATUS_LABEL) as PlanStatus[]).reduce((a, b) =>
  JSON.stringify(STATUS_LABEL[b]).length > JSON.stringify(STATUS_LABEL[a]).length ? b : a,
);

/** Room kept below the blocks budget for what packing lines into sections may add. */
const PACKING_ROOM = 300;

/**
 * How many of `lines` (from the front) one digest holds: within Slack's limits (50 blocks, 3000
 * characters a section, the total blocks budget) and DIGEST_MAX_LINES, measured as if every plan
 * had the widest status, so re-rendering after any transition still fits. The rest wait for the
 * next digest (several digests, never a cut list).
 */
export type { DigestLine, WaitingPreview };

export function digestCapacity(lines: readonly DigestLine[]): number {
  const widest = lines.slice(0, DIGEST_MAX_LINES).map((l) => ({ ...l, status: WIDEST_STATUS }));
  // Room is kept for the alike plans' buttons these lines bring now: a later update has fewer (a
  // plan is pending only once), never more.
  const fits = (n: number) => {
    const { blocks } = renderDigest(widest.slice(0, n));
    const buttons = alikeBlock(lines.slice(0, n));
    const room = buttons ? jsonSize(buttons) + 1 : 0;
    return blocks.length + (buttons ? 1 : 0) <= SLACK_LIMITS.blocks && jsonSize(blocks) + room <= BLOCKS_JSON_BUDGET - PACKING_ROOM;
  };
  // A line more never makes a digest smaller, so the lines that fit are a prefix: bisect for its
  // end (6 renders for 40 lines, where trying 1, 2, … 40 rendered 820 lines a post).
  let low = 0;
  let high = widest.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (fits(mid)) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * The digest message: a heading, one line per plan (status, title, target and op, short hash,
 * expiry, a link to its page) packed into sections, and how to approve. Rendered from the plans'
 * current state each time one of them changes, so each line shows where its plan is now.
 */
export function renderDigest(lines: readonly DigestLine[]): SlackMessage {
  const open = lines.filter((l) => l.status === "pending").length;
  const heading = `📋 *${lines.length} plans posted together* — more were waiting than this channel can show one by one in time. ${open} still waiting for a decision.`;
  const blocks: Block[] = [{ type: "section", text: mrkdwn(heading, SLACK_LIMITS.sectionText) }];
  let section: string[] = [];
  const flush = () => {
    if (section.length > 0) blocks.push({ type: "section", text: mrkdwn(section.join("\n"), SLACK_LIMITS.sectionText) });
    section = [];
  };
  for (const line of lines.map(lineOf)) {
    if ([...section, line].join("\n").length > SLACK_LIMITS.sectionText) flush();
    section.push(line);
  }
  flush();
  const buttons = alikeBlock(lines);
  if (buttons) blocks.push(buttons);
  blocks.push({
    type: "context",
    elements: [
      mrkdwn(
        "To review and approve a plan, open its page (the *open* link): Approve / Reject are there, in your Countersign App Home and through `/countersign list`. High-risk plans are posted on their own. Each plan's updates are replied in this thread.",
        SLACK_LIMITS.contextText,
      ),
    ],
  });
  return { text: truncate(`${lines.length} plans posted together for review (${open} waiting for a decision)`, SLACK_LIMITS.messageText), blocks };
}

/** "Review N like plans" for the alike pending lines; the batch holds those the clicker may decide. */
function alikeBlock(lines: readonly DigestLine[]): Block | undefined {
  const offers = alikeOffers(lines.filter((l) => l.status === "pending").map((l) => ({ id: l.planId, likeness: l.likeness })));
  return offers.length > 0 ? { type: "actions", elements: alikeButtons(offers) } : undefined;
}

function lineOf(l: DigestLine): string {
  const more = l.moreActions > 0 ? ` +${l.moreActions} more` : "";
  return [
    `• ${STATUS_LABEL[l.status]}`,
    `*${mrkdwnText(singleLine(l.title), SHOWN.title)}*`,
    `${inlineCode(singleLine(l.target), SHOWN.target)} ${inlineCode(singleLine(l.op), SHOWN.op)}${more}`,
    inlineCode(shortHash(l.hash), 14),
    `expires ${slackDate(l.expiresAt)}`,
    `<${l.reviewUrl}|open>`,
  ].join(" · ");
}

/**
 * A thread reply for one plan of a digest: the digest's thread holds every listed plan's
 * lifecycle, so each reply first says which plan it is about. Should the reply already fill
 * Slack's limits, its last detail blocks give way (the plan page has them).
 */
export function renderDigestReply(line: Pick<DigestLine, "title" | "hash" | "reviewUrl">, reply: SlackMessage): SlackMessage {
  const name = `*${mrkdwnText(singleLine(line.title), SHOWN.title)}* ${inlineCode(shortHash(line.hash), 14)}`;
  const about: Block = { type: "context", elements: [mrkdwn(`${name} · <${line.reviewUrl}|open>`, SLACK_LIMITS.contextText)] };
  const blocks = [about, ...reply.blocks];
  while (blocks.length > 2 && (blocks.length > SLACK_LIMITS.blocks || jsonSize(blocks) > BLOCKS_JSON_BUDGET)) blocks.pop();
  return { text: truncate(`${mrkdwnText(singleLine(line.title), SHOWN.title)}: ${reply.text}`, SLACK_LIMITS.messageText), blocks };
}

function jsonSize(value: unknown): number {
  return JSON.stringify(value).length;
}
