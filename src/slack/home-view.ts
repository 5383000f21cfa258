/**
 * The App Home tab: the plans waiting for one person's decision, soonest expiry first, each with
 * the same Approve/Reject buttons as the channel preview (render.ts decisionButtons: same action
 * ids and values, so the same listeners decide on them). Pure: home-publish.ts publishes it.
 */
import { shortHash } from "../plan/fingerprint.ts";
import type { WaitingPlan } from "../service/review/index.ts";
import { mention, mrkdwn, mrkdwnText, plainText, singleLine, slackDate } from "./escape.ts";
import type { DelegationView } from "../service/delegation/index.ts";
import type { Block } from "./plan-message.ts";
import { decisionButtons, SLACK_LIMITS, viewButton } from "./render.ts";
import { alikeButtons } from "./batch-modal.ts";
import type { AlikeOffer } from "../plan/alike.ts";

/** Slack refuses a Home view of more than 100 blocks. */
export const HOME_MAX_BLOCKS = 100;
/** Blocks each plan takes: its summary, its buttons and a divider. */
const BLOCKS_PER_PLAN = 3;
/** Blocks around the plans: header, notice, delegations, count line, unchecked-groups caveat, the alike plans' line and buttons, "and K more". */
const FRAME_BLOCKS = 8;
/** How many plans the tab shows at most; the rest are counted and linked to the browser list. */
export const HOME_SHOWN = Math.floor((HOME_MAX_BLOCKS - FRAME_BLOCKS) / BLOCKS_PER_PLAN);

const SHOWN = { title: 150, agent: 80, target: 60, targets: 3, notice: 1000, groups: 10, delegations: 10 } as const;

export interface HomeContent {
  /** Soonest expiry first; only the first HOME_SHOWN are shown. */
  plans: readonly WaitingPlan[];
  /** How many plans wait for this person in all (≥ plans.length). */
  total: number;
  /** Groups of alike plans among them, offered to review together ("Review N like plans"). */
  alike?: readonly AlikeOffer[] | undefined;
  /** Approver groups Slack could not answer for just now: their plans may be missing. */
  uncheckedGroups: readonly string[];
  /** The browser's list of pending plans. */
  listUrl: string;
  /** What happened to this person's last click, when it came from this tab (there is no channel to answer in). */
  notice?: string | undefined;
  /** Whose tab it is, and the delegations in force they gave or hold. */
  viewer?: string | undefined;
  delegations?: readonly DelegationView[] | undefined;
}

/** The `view` for `views.publish`. */
export interface HomeView {
  type: "home";
  blocks: Block[];
}

export function renderHome(home: HomeContent): HomeView {
  const shown = home.plans.slice(0, HOME_SHOWN);
  const blocks: Block[] = [{ type: "header", text: plainText("Waiting for your decision", SLACK_LIMITS.headerText) }];
  // The notice is Countersign's own text (refusal-text.ts), mrkdwn already.
  if (home.notice) blocks.push(section(`:information_source: ${home.notice}`, SHOWN.notice));
  if (home.viewer && home.delegations && home.delegations.length > 0) blocks.push(delegationsLine(home.viewer, home.delegations));
  blocks.push(countLine(home.total, shown.length));
  if (home.uncheckedGroups.length > 0) {
    const groups = home.uncheckedGroups
      .slice(0, SHOWN.groups)
      .map((g) => mrkdwnText(singleLine(g), 40))
      .join(", ");
    blocks.push(context(`Slack could not say just now whether you are in ${groups}; plans for those groups may be missing here.`));
  }
  if (home.alike && home.alike.length > 0) {
    const what = home.alike
      .slice(0, 5)
      .map((o) => `${o.count} × ${mrkdwnText(singleLine(o.summary), 200)}`)
      .join("; ");
    blocks.push(context(`Alike plans you may decide together, each still by itself at the version shown: ${what}.`), {
      type: "actions",
      elements: alikeButtons(home.alike),
    });
  }
  for (const plan of shown)
    blocks.push(
      planSummary(plan),
      { type: "actions", elements: [...decisionButtons({ planId: plan.id, hash: plan.hash, actions: plan.actions }), viewButton(plan)] },
      { type: "divider" },
    );
  const more = home.total - shown.length;
  if (more > 0) blocks.push(section(`…and ${more} more — <${home.listUrl}|open the list>`, SLACK_LIMITS.sectionText));
  return { type: "home", blocks };
}

/** Who decides for this person while they are away, and for whom they decide: one line each, the newest first. */
function delegationsLine(viewer: string, delegations: readonly DelegationView[]): Block {
  const where = (d: DelegationView) => (d.targets ? ` on ${d.targets.map((t) => mrkdwnText(singleLine(t), SHOWN.target)).join(", ")}` : "");
  const lines = delegations
    .slice(0, SHOWN.delegations)
    .map((d) =>
      d.delegator === viewer
        ? `:palm_tree: ${mention(d.delegate)} decides for you${where(d)} until ${slackDate(d.until)}`
        : `:handshake: You decide for ${mention(d.delegator)}${where(d)} until ${slackDate(d.until)}`,
    );
  const more = delegations.length > SHOWN.delegations ? `\n…and ${delegations.length - SHOWN.delegations} more (\`/countersign delegate list\`)` : "";
  return section(lines.join("\n") + more, SLACK_LIMITS.sectionText);
}

function countLine(total: number, shown: number): Block {
  if (total === 0)
    return section("Nothing is waiting for your decision. Plans you may approve or reject appear here as they arrive.", SLACK_LIMITS.sectionText);
  const count = total === 1 ? "1 plan waits" : `${total} plans wait`;
  return context(`${count} for you, soonest expiry first${shown < total ? ` (the first ${shown} here)` : ""}.`);
}

/** Title, who asks, where, risk, expiry and the exact version: what to look at before clicking. */
function planSummary(plan: WaitingPlan): Block {
  const targets = [...new Set(plan.actions.map((a) => `${singleLine(a.target)} (${a.op})`))];
  const where =
    targets
      .slice(0, SHOWN.targets)
      .map((t) => mrkdwnText(t, SHOWN.target))
      .join(", ") + (targets.length > SHOWN.targets ? ` and ${targets.length - SHOWN.targets} more` : "");
  const risk = plan.risk && plan.risk !== "low" ? ` · *${plan.risk.toUpperCase()} risk*` : "";
  const lines = [
    `*${mrkdwnText(singleLine(plan.title), SHOWN.title)}*`,
    `${mrkdwnText(singleLine(plan.agent), SHOWN.agent)} → ${where}${risk}`,
    `Expires ${slackDate(plan.expiresAt.toISOString())} · version \`${shortHash(plan.hash)}\``,
  ];
  return section(lines.join("\n"), SLACK_LIMITS.sectionText);
}

function section(text: string, max: number): Block {
  return { type: "section", text: mrkdwn(text, max) };
}

function context(text: string): Block {
  return { type: "context", elements: [mrkdwn(text, SLACK_LIMITS.contextText)] };
}
