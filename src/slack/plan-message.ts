import type { Outcome } from "../plan/outcome.ts";
import type { PlanDiff } from "../policy/plan-diff.ts";
import type { ActionPreview } from "../contract/agent-api.ts";
import type { PlanStatus } from "../plan/schema.ts";

/** Everything the Slack preview message shows about a plan. Built from the store; rendered by render.ts (pure). */
export interface PlanMessage {
  planId: string;
  hash: string;
  status: PlanStatus;
  environment: string;
  /** Agent-supplied: must be shown literally (never as mrkdwn, mentions or links). */
  title: string;
  reason?: string | undefined;
  /** The agent's name (configured by an operator, but still shown escaped). */
  agent: string;
  /** A Slack user id the agent says it acts for; shown as a mention only if it is a valid user id. */
  onBehalfOf?: string | undefined;
  /** ISO time. */
  expiresAt: string;
  /** `PUBLIC_URL/plans/:id`. */
  reviewUrl: string;
  actions: ActionPreview[];
  policy: { approvers: string[]; requiredApprovals: number; rule?: string | undefined };
  /** How risky, and the config rule that says so. */
  risk?: { level: "low" | "medium" | "high"; rule: string } | undefined;
  /** `recheckFailed`: recorded although the targets could not be re-read at the click. `for`: acted for this person, through a delegation. */
  approvals: { userId: string; via: "slack" | "web"; at: string; recheckFailed?: string | undefined; for?: string | undefined }[];
  /** The server's re-reads of the plan's targets while it is open: since when they fail, if they do. */
  watch?: { checkedAt: string | null; failingSince: string | null } | undefined;
  rejection?: { userId: string; reason: string; for?: string | undefined } | undefined;
  /** Who withdrew the approval before an executor took the plan (and for whom, through a delegation), and why. */
  revocation?: { userId: string; reason: string; for?: string | undefined } | undefined;
  outcome?: Outcome | undefined;
  /** A re-plan: what it does differently from the version it replaces (masked as previews are). */
  changedSince?: PlanDiff | undefined;
  /** The newer version that replaced this plan (it is superseded, or stale and replaced), and whose edit made it. */
  supersededBy?: { hash: string; reviewUrl: string; editedBy?: { userId: string } | undefined } | undefined;
  /** The reviewer whose edit of the version before made this one. */
  editedBy?: string | undefined;
  /** A pending plan whose values reviewers may edit (its policy allows it and it writes values): it gets an Edit button. */
  editable?: boolean | undefined;
  /** An undo: the applied plan it takes back, and the person who asked for it (a requester of it). */
  undoes?: { hash: string; reviewUrl: string } | undefined;
  askedBy?: string | undefined;
  /** The applied undo that took this plan back. */
  undoneBy?: { hash: string; reviewUrl: string } | undefined;
  /** Applied (or failed part-way) and not taken back: it gets a Propose undo button. */
  undoable?: boolean | undefined;
}

/** One thing that happened to a plan, as a reply in the preview's thread. */
export type ThreadEvent =
  /** `for`, here and below: the person the decider acted for, through a delegation ("Bob for Alice"). */
  | { type: "decision.approve"; userId: string; approvals: number; requiredApprovals: number; for?: string | undefined }
  /** `actedFor`: approver → the person they acted for, where one did. */
  | { type: "plan.approved"; approvers: string[]; actedFor?: Record<string, string> | undefined }
  | { type: "plan.rejected"; userId: string; reason: string; for?: string | undefined }
  | { type: "plan.expired"; reason?: string }
  | { type: "plan.cancelled"; agent: string }
  | { type: "plan.executing" }
  | { type: "plan.reclaimed"; claim: number }
  | { type: "plan.applied"; outcome: Outcome; actions: ActionPreview[] }
  | { type: "plan.failed"; outcome: Outcome }
  | { type: "plan.stale"; outcome: Outcome }
  | { type: "plan.revoked"; userId: string; reason: string; for?: string | undefined }
  /** Replaced by a newer version: whose edit made it (none: the agent's re-plan), and who had approved this one (their approvals do not carry over). */
  | { type: "plan.superseded"; editedBy?: string | undefined; newer: { hash: string; reviewUrl: string }; approvers: string[] }
  /** Someone (or the agent) asked for this plan to be taken back: the undo, posted for review. */
  | { type: "undo.proposed"; undo: { hash: string; reviewUrl: string }; askedBy?: string | undefined; agent?: string | undefined }
  /** The undo of this plan was applied: the target holds what it held before this plan. */
  | { type: "undo.applied"; undo: { hash: string; reviewUrl: string } }
  /** Approved, and no executor is connected to apply it: when one was last seen (null: never), and when the approval lapses. */
  | { type: "plan.no_executor"; lastSeenAt: string | null; grantExpiresAt: string | undefined }
  /** Still undecided close to expiry: mentions who could still decide; `delegated`: those among them deciding for someone away. */
  | {
      type: "plan.reminder";
      expiresAt: string;
      missing: string[];
      approvals: number;
      requiredApprovals: number;
      delegated?: { userId: string; for: string }[] | undefined;
    };

/** Block Kit as sent to Slack; kept loose on purpose, the renderer's tests pin the shapes. */
export type Block = Record<string, unknown>;

export interface SlackMessage {
  /** Notification / fallback text: plain, escaped like everything else. */
  text: string;
  blocks: Block[];
}
