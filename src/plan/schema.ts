import { z } from "zod";
import { PostgresRowAction, PostgresRowPlanned } from "./postgres-row-schema.ts";
import { SHA256_PATTERN } from "./fingerprint.ts";
import { canonicalPath, whyUnsafePath } from "./target-path.ts";
import type { Json } from "./json.ts";

export const LIMITS = {
  maxActions: 20,
  maxDepth: 32,
  maxBodyBytes: 256 * 1024,
  maxTitle: 200,
  maxReason: 4000,
} as const;

export { PLAN_STATUSES, type PlanStatus } from "./status.ts";

/** Plan ids are UUIDs; anything else is no plan, answered before the database is asked. */
export function isPlanId(id: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
}

export const OPS = ["merge", "replace", "delete", "create"] as const;
export type Op = (typeof OPS)[number];

/** Slack user ids: U… or W… (Enterprise Grid). */
export const SlackUserId = z.string().regex(/^[UW][A-Z0-9]{2,}$/, "must be a Slack user id such as U024BE7LH");
/** An approver: a Slack user id, or a user group id (S…) whose members are looked up when someone decides. */
export const ApproverId = z.string().regex(/^([UW]|S)[A-Z0-9]{2,}$/, "must be a Slack user id (U024BE7LH) or user group id (S0614TZR7)");

const jsonValue: z.ZodType<Json> = z.json();

const TargetPath = z
  .string()
  .max(2048)
  .superRefine((path, ctx) => {
    const why = whyUnsafePath(path);
    if (why) ctx.addIssue({ code: "custom", message: `path ${why}` });
  });

export const HttpJsonAction = z
  .strictObject({
    kind: z.literal("http.json"),
    target: z.string().min(1).max(100),
    path: TargetPath,
    op: z.enum(OPS),
    body: jsonValue.optional(),
  })
  .superRefine((action, ctx) => {
    const needsBody = action.op !== "delete";
    if (needsBody && action.body === undefined) {
      ctx.addIssue({ code: "custom", path: ["body"], message: `op '${action.op}' needs a body` });
    }
    if (!needsBody && action.body !== undefined) {
      ctx.addIssue({ code: "custom", path: ["body"], message: "op 'delete' takes no body" });
    }
    if ((action.op === "replace" || action.op === "create") && action.body !== undefined && (typeof action.body !== "object" || action.body === null)) {
      ctx.addIssue({ code: "custom", path: ["body"], message: `op '${action.op}' needs a JSON object or array body` });
    }
  });

/** The kinds of action there are: one per registered adapter (src/adapters/registry.ts, defaultRegistry). */
export const ACTION_KINDS = ["http.json", "postgres.row"] as const;

/** An unknown or missing `kind` names the kinds there are. */
const unknownKind = (issue: { code?: string; input?: unknown }) => {
  if (issue.code !== "invalid_union") return undefined;
  const kind = typeof issue.input === "object" && issue.input !== null ? (issue.input as { kind?: unknown }).kind : undefined;
  const known = ACTION_KINDS.map((k) => `'${k}'`).join(", ");
  return kind === undefined ? `kind is missing; known kinds: ${known}` : `no adapter of kind ${JSON.stringify(kind).slice(0, 60)}; known kinds: ${known}`;
};

/**
 * Every action kind Countersign knows: a discriminated union over the registered adapters'
 * action schemas, so a new adapter only adds its own.
 */
export const ActionRequest = z.discriminatedUnion("kind", [HttpJsonAction, PostgresRowAction], { error: unknownKind });
export type ActionRequest = z.infer<typeof ActionRequest>;

/**
 * What an action changes, for finding two actions of one plan on the same resource: the target
 * and, per kind, the path (canonical) or the table and key (key columns in name order; the
 * adapter's path orders them by config, which is not known here, but the identity is the same).
 * A postgres.row key is compared as sent: column types are not known here, so the preview takes
 * each key value only in the one form the database reads back ("0", not "-0") and refuses jsonb
 * key columns; equal rows then have equal keys here.
 */
function resourceOf(action: ActionRequest): string | undefined {
  if (action.kind === "http.json") return whyUnsafePath(action.path) ? undefined : `${action.target}\u0000${canonicalPath(action.path)}`;
  const key = Object.entries(action.key).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${action.target}\u0000${action.table}\u0000${JSON.stringify(key)}`;
}

/** What an agent sends to `POST /v1/plans`. */
export const PlanRequest = z
  .strictObject({
    title: z.string().trim().min(1).max(LIMITS.maxTitle),
    reason: z.string().max(LIMITS.maxReason).optional(),
    actions: z.array(ActionRequest).min(1).max(LIMITS.maxActions, `at most ${LIMITS.maxActions} actions per plan`),
    ttlSeconds: z.int().positive().optional(),
    onBehalfOf: SlackUserId.optional(),
    idempotencyKey: z.string().min(1).max(200).optional(),
    /** Receives a signed POST on every status change; its host must be allowed in config (webhooks.allowedHosts). */
    callbackUrl: z
      .url({ protocol: /^https?$/, error: "callbackUrl must be an http(s) URL" })
      .max(2048)
      .optional(),
    /** A re-plan: the id of this agent's earlier version (pending, approved and unclaimed, or stale) that this one replaces. */
    supersedes: z.uuid({ error: "supersedes must be the id of one of your plans" }).optional(),
  })
  .superRefine((plan, ctx) => {
    // The first write to a resource would make a second action on it stale.
    const seen = new Map<string, number>();
    plan.actions.forEach((action, i) => {
      const key = resourceOf(action);
      if (key === undefined) return;
      const first = seen.get(key);
      if (first !== undefined) {
        const what = action.kind === "http.json" ? action.path : `${action.table} ${JSON.stringify(action.key).slice(0, 200)}`;
        ctx.addIssue({
          code: "custom",
          path: ["actions", i, action.kind === "http.json" ? "path" : "key"],
          message: `action ${i} writes ${action.target} ${what} again (action ${first} already does); merge them into one action`,
        });
      } else seen.set(key, i);
    });
  });
export type PlanRequest = z.infer<typeof PlanRequest>;

/** What the preview proved about a target before anyone decided: the precondition the executor re-checks. */
export const Precondition = z.union([
  z.strictObject({ etag: z.string().min(1) }),
  /** The target gives no version: the executor compares a digest of what it re-reads (weaker than an ETag). */
  z.strictObject({ digest: z.string().regex(SHA256_PATTERN) }),
  z.strictObject({ absent: z.literal(true) }),
]);
export type Precondition = z.infer<typeof Precondition>;

/** An http.json action as the preview fixed it: the body and the precondition the executor insists on. */
export const HttpJsonPlanned = z.strictObject({
  kind: z.literal("http.json"),
  target: z.string(),
  path: z.string(),
  op: z.enum(OPS),
  body: jsonValue.optional(),
  precondition: Precondition,
  beforeDigest: z.string().regex(SHA256_PATTERN),
  afterDigest: z.string().regex(SHA256_PATTERN),
});
export type HttpJsonPlanned = z.infer<typeof HttpJsonPlanned>;

/**
 * One action of a plan document, as its adapter's preview fixed it: the union of the registered
 * adapters' planned schemas. Hashed as it is, so an http.json action hashes exactly as it did
 * before there were other kinds.
 */
export const PlannedAction = z.discriminatedUnion("kind", [HttpJsonPlanned, PostgresRowPlanned]);
export type PlannedAction = z.infer<typeof PlannedAction>;

/** A person and the door they acted through, as a plan document records them. */
export const PersonAct = z.strictObject({ userId: z.string().min(1), via: z.enum(["slack", "web"]) });
export type PersonAct = z.infer<typeof PersonAct>;

export const AppliedPolicy = z.strictObject({
  approvers: z.array(ApproverId),
  requiredApprovals: z.int().positive(),
  /** Seconds the executor has after approval; part of what approvers sign. */
  grantTtlSeconds: z.int().positive(),
  /** Which config rules set the approvers and the quorum (e.g. "targets.crm.policy", "defaults"), for reviewers. */
  rule: z.string().optional(),
  /** How risky the plan is and which config rule says so (its riskiest action decides). */
  risk: z.strictObject({ level: z.enum(["low", "medium", "high"]), rule: z.string() }).optional(),
  /** Present when a target's policy (`batch: false`) keeps this plan out of batches: it is reviewed on its own. */
  batch: z.literal(false).optional(),
  /** Present when a target's policy (`edits: false`) keeps reviewers from editing the plan's values. */
  edits: z.literal(false).optional(),
  /** Present when a target's policy (`delegation: false`) lets no delegate act for an approver on this plan. */
  delegation: z.literal(false).optional(),
});
export type AppliedPolicy = z.infer<typeof AppliedPolicy>;

/**
 * The plan document: everything that defines the effect, and nothing else. Its JCS SHA-256 is
 * the plan hash that every decision and grant binds to. A stored plan never changes.
 */
export const PlanDocument = z.strictObject({
  v: z.literal(1),
  id: z.uuid(),
  environment: z.string(),
  agent: z.string(),
  title: z.string(),
  reason: z.string().optional(),
  onBehalfOf: z.string().optional(),
  actions: z.array(PlannedAction).min(1),
  policy: AppliedPolicy,
  expiresAt: z.iso.datetime(),
  /**
   * The earlier version this plan replaces. Hashed: approvers decide on "this, instead of that"
   * (they are shown what changed since it), so the lineage is part of what they sign and what a
   * grant or an audit export proves, not a column beside the document anyone could re-point.
   */
  supersedes: z.uuid().optional(),
  /** The reviewer whose edit made this version from the one it supersedes: a requester of it. */
  editedBy: PersonAct.optional(),
  /** The applied plan this one takes back (an undo); hashed, so approvers sign "undo that plan". */
  undoes: z.uuid().optional(),
  /** The person who asked for this undo: a requester of it. */
  askedBy: PersonAct.optional(),
});
export type PlanDocument = z.infer<typeof PlanDocument>;

/** What the preview shows a reviewer for one action: part of the agent API's wire contract. */
