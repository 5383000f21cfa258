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
  /** `recheckFailed`: recorded although the targets could not be re-read at the click. */
  approvals: { userId: string; via: "slack" | "web"; at: string; recheckFailed?: string | undefined }[];
  /** The server's re-reads of the plan's targets while it is open: since when they fail, if they do. */
  watch?: { checkedAt: string | null; failingSince: string | null } | undefined;
  rejection?: { userId: string; reason: string } | undefined;
  /** Who withdrew the approval before an executor took the plan, and why. */
  revocation?: { userId: string; reason: string } | undefined;
  outcome?: Outcome | undefined;
  /** A re-plan: what it does differently from the version it replaces (masked as previews are). */
  changedSince?: PlanDiff | undefined;
  /** The newer version that replaced this plan (it is superseded, or stale and replaced). */
  supersededBy?: { hash: string; reviewUrl: string } | undefined;
}

/** One thing that happened to a plan, as a reply in the preview's thread. */
export type ThreadEvent =
  | { type: "decision.approve"; userId: string; approvals: number; requiredApprovals: number }
  | { type: "plan.approved"; approvers: string[] }
  | { type: "plan.rejected"; userId: string; reason: string }
  | { type: "plan.expired"; reason?: string }
  | { type: "plan.cancelled"; agent: string }
  | { type: "plan.executing" }
  | { type: "plan.reclaimed"; claim: number }
  | { type: "plan.applied"; outcome: Outcome; actions: ActionPreview[] }
  | { type: "plan.failed"; outcome: Outcome }
  | { type: "plan.stale"; outcome: Outcome }
  | { type: "plan.revoked"; userId: string; reason: string }
  /** Approved, and no executor is connected to apply it: when one was last seen (null: never), and when the approval lapses. */
  | { type: "plan.no_executor"; lastSeenAt: string | null; grantExpiresAt: string | undefined }
  /** Still undecided close to expiry: mentions who could still decide. */
  | { type: "plan.reminder"; expiresAt: string; missing: string[]; approvals: number; requiredApprovals: number };

/** Block Kit as sent to Slack; kept loose on purpose, the renderer's tests pin the shapes. */
export type Block = Record<string, unknown>;

export interface SlackMessage {
  /** Notification / fallback text: plain, escaped like everything else. */
  text: string;
  blocks: Block[];
}
