import { z } from "zod";
import { POSTGRES_ROW_OPS } from "../plan/postgres-row-schema.ts";
import { ApproverId, OPS } from "../plan/schema.ts";

const Seconds = z.int().positive();
/** A description shared by a default and its override, as a sentence of its own. */
const sentence = (text: string) => text[0]!.toUpperCase() + text.slice(1);

export const TtlConfig = z
  .strictObject({
    default: Seconds.default(900).meta({ description: "Seconds a plan waits for decisions when its agent asks for no `ttlSeconds`.", examples: [900] }),
    max: Seconds.default(86_400).meta({ description: "The longest `ttlSeconds` an agent may ask for; an undecided plan expires then.", examples: [86_400] }),
  })
  .refine((t) => t.default <= t.max, { message: "ttl.default must not exceed ttl.max", path: ["default"] });

const Risk = z.enum(["low", "medium", "high"]);
/** A risk level per op, over the ops `ops` names (one adapter's, or every adapter's for `defaults`). */
const riskByOp = (ops: readonly string[]) =>
  z.strictObject(
    Object.fromEntries(ops.map((op) => [op, Risk.optional().meta({ description: `The risk of \`${op}\` actions, instead of \`risk\`.`, examples: ["high"] })])),
  ) as unknown as z.ZodType<Partial<Record<string, z.infer<typeof Risk>>>>;
/** Every op of every adapter: `defaults.riskByOp` applies to targets of all kinds. */
const ALL_OPS = [...new Set([...OPS, ...POSTGRES_ROW_OPS])];

/** Seconds an executor has, after approval, to start applying a plan. */
const GrantTtl = z.int().min(30).max(86_400);

const APPROVERS =
  "the Slack user ids (`U…`, `W…`) of the people who may approve, and user groups (`S…`) whose members may (looked up when someone decides). " +
  "The person a plan is on behalf of (`onBehalfOf`) never approves their own request.";
const GRANT_TTL =
  "seconds an approved plan's grant stays valid: an executor must claim it within this time, or it expires unapplied. Part of the plan approvers sign.";
const BATCH =
  "whether plans alike to others (same agent, targets, ops and fields) may be offered to a reviewer together, to approve or reject as one batch; each plan is still decided by itself. `false` keeps them to one review each; a plan touching several targets is batched only if all of them allow it.";
const EDITS =
  "whether a reviewer who may decide a pending plan may edit its values (the fields, body members and row columns it already writes) before approving; the edit is a new version that someone else approves. `false` keeps the agent's values; a plan touching several targets may be edited only if all of them allow it.";
const DELEGATION =
  "whether a person away may have a delegate decide, revoke and edit plans on this target in their place (`countersign delegate`, `/countersign delegate`); `false` leaves this target's plans to the approvers themselves. A plan touching several targets allows delegates only if all of them do.";
const REMINDERS = "seconds before expiry at which an undecided plan gets a reminder in its thread, naming who is still needed (at most 5).";

export const PolicyDefaults = z.strictObject({
  approvers: z
    .array(ApproverId)
    .default([])
    .meta({ description: sentence(APPROVERS), examples: [["U024BE7LH", "U0G9QF9C6"]] }),
  requiredApprovals: z
    .int()
    .positive()
    .default(1)
    .meta({ description: "How many different approvers must approve (M of N).", examples: [2] }),
  ttl: TtlConfig.default({ default: 900, max: 86_400 }).describe("How long a plan waits for decisions; undecided plans expire."),
  grantTtl: GrantTtl.default(600).meta({ description: sentence(GRANT_TTL), examples: [600] }),
  reminders: z
    .array(Seconds)
    .max(5)
    .default([])
    .meta({ description: sentence(REMINDERS), examples: [[600, 120]] }),
  risk: Risk.default("low").meta({
    description: "How risky changes are by default; shown to reviewers. A plan is as risky as its riskiest action.",
    examples: ["medium"],
  }),
  riskByOp: riskByOp(ALL_OPS).optional().describe("A risk level per op, over `risk`, for targets of every kind (a target's `policy.riskByOp` wins over it)."),
  batch: z
    .boolean()
    .default(true)
    .meta({ description: sentence(BATCH), examples: [false] }),
  edits: z
    .boolean()
    .default(true)
    .meta({ description: sentence(EDITS), examples: [false] }),
  delegation: z
    .boolean()
    .default(true)
    .meta({ description: sentence(DELEGATION), examples: [false] }),
  highRisk: z
    .strictObject({
      requiredApprovals: z
        .int()
        .positive()
        .optional()
        .meta({ description: "Approvals a high-risk plan needs, when more than the policy's own.", examples: [2] }),
      ttlMax: Seconds.optional().meta({
        description: "The longest a high-risk plan may wait for decisions, in seconds, when shorter than `ttl.max`.",
        examples: [3600],
      }),
    })
    .optional()
    .describe("What a high-risk plan needs instead: more approvals, less time. Never loosens a policy."),
});

export const ChannelId = z.string().regex(/^[CG][A-Z0-9]+$/, "must be a Slack channel id such as C0123ABCD");

/** A target's own policy; `riskByOp` names the ops of the target's adapter. */
export const policyOverride = (ops: readonly string[]) =>
  z.strictObject({
    reviewChannel: ChannelId.optional().meta({
      description: "Where this target's plans are reviewed, instead of `slack.reviewChannel`.",
      examples: ["C0456EFGH"],
    }),
    approvers: z
      .array(ApproverId)
      .optional()
      .meta({ description: `Instead of \`defaults.approvers\`: ${APPROVERS}`, examples: [["U024BE7LH", "S0CRMOWNERS"]] }),
    requiredApprovals: z
      .int()
      .positive()
      .optional()
      .meta({ description: "Instead of `defaults.requiredApprovals`: how many different approvers must approve.", examples: [2] }),
    ttl: TtlConfig.optional().describe("Instead of `defaults.ttl`: how long this target's plans wait for decisions."),
    grantTtl: GrantTtl.optional().meta({ description: `Instead of \`defaults.grantTtl\`: ${GRANT_TTL}`, examples: [300] }),
    reminders: z
      .array(Seconds)
      .max(5)
      .optional()
      .meta({ description: `Instead of \`defaults.reminders\`: ${REMINDERS}`, examples: [[300]] }),
    risk: Risk.optional().meta({ description: "Instead of `defaults.risk`: how risky changes to this target are.", examples: ["high"] }),
    riskByOp: riskByOp(ops).optional().describe("A risk level per op of this target's adapter, over `risk` and `defaults.riskByOp`."),
    batch: z
      .boolean()
      .optional()
      .meta({ description: `Instead of \`defaults.batch\`: ${BATCH}`, examples: [false] }),
    edits: z
      .boolean()
      .optional()
      .meta({ description: `Instead of \`defaults.edits\`: ${EDITS}`, examples: [false] }),
    delegation: z
      .boolean()
      .optional()
      .meta({ description: `Instead of \`defaults.delegation\`: ${DELEGATION}`, examples: [false] }),
  });
export const PolicyOverride = policyOverride(OPS);

/** How fast one agent may submit, and how many of its plans may wait at once (pending or approved). */
const AgentLimits = z.strictObject({
  plansPerMinute: z
    .int("must be a whole number of plans")
    .positive("must be at least 1")
    .optional()
    .meta({ description: "Plans this agent may submit in any 60 s, instead of `limits.plansPerMinute`.", examples: [600] }),
  maxPending: z
    .int("must be a whole number of plans")
    .positive("must be at least 1")
    .optional()
    .meta({ description: "Plans of this agent that may wait at once, instead of `limits.maxPending`.", examples: [1000] }),
});

/**
 * Agent limits, each agent's own under `agents.<name>` on top of the top-level values. Names
 * there are not checked against the agents that exist: agents are added at run time.
 */
export const LimitsConfig = z.strictObject({
  plansPerMinute: z
    .int("must be a whole number of plans")
    .positive("must be at least 1")
    .default(60)
    .meta({ description: "Plans one agent may submit in any 60 s; beyond it `POST /v1/plans` answers 429 with Retry-After.", examples: [60] }),
  maxPending: z
    .int("must be a whole number of plans")
    .positive("must be at least 1")
    .default(100)
    .meta({ description: "Plans of one agent that may wait at once, pending or approved.", examples: [100] }),
  agents: z
    .record(z.string().min(1), AgentLimits)
    .default({})
    .describe("An agent's own limits, by its name (`countersign agents add NAME`); a key left out takes the value above. Names not yet added are fine."),
});
export type LimitsConfig = z.infer<typeof LimitsConfig>;
