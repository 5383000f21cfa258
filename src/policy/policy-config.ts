import { z } from "zod";
import { POSTGRES_ROW_OPS } from "../plan/postgres-row-schema.ts";
import { ApproverId, OPS } from "../plan/schema.ts";

const Seconds = z.int().positive();

export const TtlConfig = z
  .strictObject({ default: Seconds.default(900), max: Seconds.default(86_400) })
  .refine((t) => t.default <= t.max, { message: "ttl.default must not exceed ttl.max", path: ["default"] });

const Risk = z.enum(["low", "medium", "high"]);
/** A risk level per op, over the ops `ops` names (one adapter's, or every adapter's for `defaults`). */
const riskByOp = (ops: readonly string[]) =>
  z.strictObject(Object.fromEntries(ops.map((op) => [op, Risk.optional()]))) as unknown as z.ZodType<Partial<Record<string, z.infer<typeof Risk>>>>;
/** Every op of every adapter: `defaults.riskByOp` applies to targets of all kinds. */
const ALL_OPS = [...new Set([...OPS, ...POSTGRES_ROW_OPS])];

/** Seconds an executor has, after approval, to start applying a plan. */
const GrantTtl = z.int().min(30).max(86_400);

export const PolicyDefaults = z.strictObject({
  approvers: z.array(ApproverId).default([]),
  requiredApprovals: z.int().positive().default(1),
  ttl: TtlConfig.default({ default: 900, max: 86_400 }),
  grantTtl: GrantTtl.default(600),
  /** Seconds before expiry at which undecided plans get a reminder in their thread, mentioning who is still needed. */
  reminders: z.array(Seconds).max(5).default([]),
  /** How risky changes are by default; shown to reviewers. */
  risk: Risk.default("low"),
  riskByOp: riskByOp(ALL_OPS).optional(),
  /** What a high-risk plan needs instead: more approvals, less time. */
  highRisk: z.strictObject({ requiredApprovals: z.int().positive().optional(), ttlMax: Seconds.optional() }).optional(),
});

export const ChannelId = z.string().regex(/^[CG][A-Z0-9]+$/, "must be a Slack channel id such as C0123ABCD");

/** A target's own policy; `riskByOp` names the ops of the target's adapter. */
export const policyOverride = (ops: readonly string[]) =>
  z.strictObject({
    /** Where this target's plans are reviewed, instead of slack.reviewChannel. */
    reviewChannel: ChannelId.optional(),
    approvers: z.array(ApproverId).optional(),
    requiredApprovals: z.int().positive().optional(),
    ttl: TtlConfig.optional(),
    grantTtl: GrantTtl.optional(),
    reminders: z.array(Seconds).max(5).optional(),
    risk: Risk.optional(),
    riskByOp: riskByOp(ops).optional(),
  });
export const PolicyOverride = policyOverride(OPS);

/** How fast one agent may submit, and how many of its plans may wait at once (pending or approved). */
const AgentLimits = z.strictObject({
  plansPerMinute: z.int("must be a whole number of plans").positive("must be at least 1").optional(),
  maxPending: z.int("must be a whole number of plans").positive("must be at least 1").optional(),
});

/**
 * Agent limits, each agent's own under `agents.<name>` on top of the top-level values. Names
 * there are not checked against the agents that exist: agents are added at run time.
 */
export const LimitsConfig = z.strictObject({
  plansPerMinute: z.int("must be a whole number of plans").positive("must be at least 1").default(60),
  maxPending: z.int("must be a whole number of plans").positive("must be at least 1").default(100),
  agents: z.record(z.string().min(1), AgentLimits).default({}),
});
export type LimitsConfig = z.infer<typeof LimitsConfig>;
