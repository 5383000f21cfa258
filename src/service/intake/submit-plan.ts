import { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { PgInsertValue } from "drizzle-orm/pg-core";
import { AdapterError, type Adapter } from "../../adapters/adapter.ts";
import { TargetReadError } from "../../adapters/http-json.ts";
import { fingerprint } from "../../plan/fingerprint.ts";
import { PlanDocument, PlanRequest, type ActionRequest, type PersonAct, type PlannedAction } from "../../plan/schema.ts";
import { requestersOf } from "../../plan/requesters.ts";
import { type ActionPreview } from "../../contract/agent-api.ts";
import { isUserGroup } from "../../policy/approvers.ts";
import { effectivePolicy } from "../../policy/effective-policy.ts";
import { applyRisk, assessRisk, type RiskRules } from "../../policy/risk.ts";
import type { PolicyDefaultsConfig, PolicyOverrideConfig } from "../../policy/effective-policy.ts";
import { redactText } from "../../policy/redact.ts";
import { whyCallbackRefused } from "../../policy/callback-url.ts";
import { resolveTtl } from "../../policy/ttl.ts";
import { plans } from "../../store/schema.ts";
import type { Tx } from "../../store/db.ts";
import type { AgentIdentity } from "../agents/authenticate-agent.ts";
import type { ServiceContext } from "../context.ts";
import { admitGuard, admitPlanGuard, checkAgentLimits, guardRefusal, isOverLimit, type AdmitGuard, type ReadUsage } from "../agents/agent-limits.ts";
import { ServiceError } from "../errors.ts";
import { newPlanView, planView, type PlanView } from "../lifecycle/plan-view.ts";
import { rememberDecisionTerms } from "../lifecycle/decision-terms.ts";
import { supersedablePlan, supersedeIn } from "./supersede.ts";
import { planEventStatement, type PlanRow } from "../lifecycle/transition.ts";
import { storeNewPlan, type NewPlan } from "./store-new-plan.ts";
import { validate } from "../validate.ts";

export interface SubmitPlanInput {
  agent: AgentIdentity;
  /** The request as received: validated here, so every door gets the same errors. */
  request: unknown;
  /** The agent's usage, when read with its key (authenticateAgentForSubmit); else read here. */
  usage?: ReadUsage;
}

/**
 * An agent proposes a plan: validate it, preview every action with read-only credentials,
 * fix the preconditions and policy into an immutable, hashed document, and store it pending.
 * Nothing is stored when anything fails. `created` is false for an idempotent retry.
 */
export async function submitPlan(ctx: ServiceContext, input: SubmitPlanInput): Promise<{ created: boolean; plan: PlanView }> {
  const { agent } = input;
  refuseUnknownKinds(ctx, input.request);
  const request = validate(PlanRequest, input.request, "plan request");
  const requestDigest = fingerprint(request);

  if (request.idempotencyKey !== undefined) {
    const earlier = await findByIdempotencyKey(ctx, agent.id, request.idempotencyKey, requestDigest);
    if (earlier) return { created: false, plan: earlier };
  }
  // A re-plan whose old version cannot be replaced is refused before any target is read.
  const replaced = request.supersedes === undefined ? undefined : await supersedablePlan(ctx, agent, request.supersedes);
  const replacing = { replacesOpen: replaced !== undefined && replaced.status !== "stale" };
  // After the idempotency lookup (a retry of an existing plan is never limited), before any target read.
  let limits: Awaited<ReturnType<typeof checkAgentLimits>>;
  try {
    limits = await checkAgentLimits(ctx, agent, replacing, input.usage);
  } catch (err) {
    // A retry whose twin committed after the lookup above is that plan, counted in the limit it hit.
    const twin =
      request.idempotencyKey !== undefined && err instanceof ServiceError && err.code === "rate_limited"
        ? await findByIdempotencyKey(ctx, agent.id, request.idempotencyKey, requestDigest)
        : undefined;
    if (twin) return { created: false, plan: twin };
    throw err;
  }

  const { document, hash, stored } = await previewVersion(ctx, { agent, request, requestDigest, replaced });
  const now = stored.createdAt;
  // Holds the limits exactly when this agent's submissions race past checkAgentLimits.
  const values = { ...stored, agentId: admitPlanGuard(agent.id, limits, now.getTime()) };
  const actor = { type: "agent", agentId: agent.id, name: agent.name } as const;
  const submitted = {
    plan: stored,
    type: "plan.submitted",
    actor,
    at: now,
    data: { title: request.title, expiresAt: document.expiresAt, ...(replaced ? { supersedes: replaced.id } : {}) },
  };
  const supersede = replaced && ((tx: Tx) => supersedeIn(ctx, tx, { oldId: replaced.id, next: { id: stored.id, hash }, actor }));
  const guard = admitGuard(agent.id, limits, now.getTime());
  const row = await storePlan(ctx, { values, plan: stored, guard, submitted, keyed: request.idempotencyKey !== undefined, ...(supersede ? { supersede } : {}) })
    .then((created) => (created ? stored : undefined))
    .catch(async (err: unknown) => {
      if (!isOverLimit(err)) throw err;
      // A retry racing its first submission is answered with that plan below, never limited.
      if (request.idempotencyKey !== undefined && (await findByIdempotencyKey(ctx, agent.id, request.idempotencyKey, requestDigest))) return undefined;
      throw await guardRefusal(ctx, agent, replacing);
    });
  if (!row) {
    const earlier = await findByIdempotencyKey(ctx, agent.id, request.idempotencyKey!, requestDigest);
    if (!earlier) throw new Error(`plan insert under idempotencyKey '${request.idempotencyKey}' conflicted, yet no plan holds that key`);
    return { created: false, plan: earlier };
  }
  rememberDecisionTerms(ctx.database, row.id, { document, hash: row.hash, expiresAt: row.expiresAt });
  return { created: true, plan: newPlanView(ctx.config.publicUrl, row, "agent", ctx.redaction, replaced ? { supersedes: replaced } : {}) };
}

/** What a new version is made from: the validated request, for which agent, and what it replaces. */
export interface VersionInput {
  agent: AgentIdentity;
  request: PlanRequest;
  requestDigest: string;
  replaced: PlanRow | undefined;
  /** The reviewer whose edit makes this version: recorded in the hashed document, a requester of it. */
  editedBy?: PersonAct | undefined;
  /** An undo: the applied plan it takes back, and the person who asked for it (a requester of it). */
  undoes?: string | undefined;
  askedBy?: PersonAct | undefined;
  /** Where its status changes are posted when it keeps another version's (null: nowhere); absent, the request's or the agent's. */
  callbackUrl?: string | null | undefined;
}

/**
 * A new version, not yet stored: every action checked against its target's allow rules and
 * previewed with the read credential, the policy and expiry fixed, the document hashed. The same
 * for an agent's plan and a reviewer's edit of one; nothing is stored, nothing is written.
 */
export async function previewVersion(ctx: ServiceContext, input: VersionInput): Promise<{ document: PlanDocument; hash: string; stored: PlanRow }> {
  const { agent, request, requestDigest, replaced } = input;
  const targets = request.actions.map((action, i) => targetOf(ctx, action, i));

  // What may be proposed is checked before any request reaches a target: each target's adapter
  // answers for its own allow block, naming the config key of every refusal.
  const refusals = [...new Set(request.actions.map((a) => a.target))].flatMap((name) => {
    const on = request.actions.flatMap((action, index) => (action.target === name ? [{ index, action }] : []));
    const { adapter, config } = targets[on[0]!.index]!;
    return adapter.refusals(name, config, on);
  });
  if (refusals.length > 0) {
    throw new ServiceError("policy_denied", `the plan is outside what its targets allow: ${refusals.map((r) => `${r.message} (rule ${r.rule})`).join("; ")}`, {
      issues: refusals.map((r) => ({ path: r.path, message: `${r.message} (rule ${r.rule})` })),
      details: { rules: [...new Set(refusals.map((r) => r.rule))] },
    });
  }
  // The op and path allowlists, risk rules and outcomes see, from each adapter (before any read).
  const addresses = request.actions.map((action, i) => {
    try {
      return targets[i]!.adapter.address(action.target, targets[i]!.config, action);
    } catch (err) {
      throw previewFailure(err, i);
    }
  });

  const risk = assessRisk(
    request.actions.map((a, i) => ({ op: addresses[i]!.op, rules: riskRulesOf(ctx.config.defaults, a.target, targets[i]!.config.policy) })),
  );
  const policy = applyRisk(
    effectivePolicy(
      ctx.config.defaults,
      targets.map((t) => t.config.policy),
    ),
    risk.level,
    ctx.config.defaults.highRisk,
  );
  // Nobody counts towards the quorum of their own request: the person it is for, nor the reviewer whose edit made it.
  const requesters = requestersOf({ onBehalfOf: request.onBehalfOf, editedBy: input.editedBy, askedBy: input.askedBy });
  const eligible = policy.approvers.filter((a) => !requesters.includes(a));
  if (!eligible.some(isUserGroup) && eligible.length < policy.requiredApprovals) {
    throw new ServiceError(
      "policy_denied",
      input.editedBy
        ? `this edit would leave ${eligible.length} approver(s) who may approve the new version (${eligible.join(", ") || "none"}), but it needs ${policy.requiredApprovals}: the reviewer who edits a plan may not approve it; reject it, or ask another approver to edit it`
        : `this plan needs ${policy.requiredApprovals} approval(s) from people who may approve every target it touches and are not the requester, but only ${eligible.length} such approver(s) exist (${eligible.join(", ") || "none"})`,
      input.editedBy ? { details: { approvers: eligible, requiredApprovals: policy.requiredApprovals } } : {},
    );
  }
  // A version made from another keeps its callback URL (the webhook sink checks the allowlist again when it posts).
  const carried = input.callbackUrl !== undefined;
  const callbackUrl = carried ? (input.callbackUrl ?? undefined) : (request.callbackUrl ?? ctx.config.webhooks.agents[agent.name]?.callbackUrl);
  const callbackRefused = carried || callbackUrl === undefined ? undefined : whyCallbackRefused(callbackUrl, ctx.config.webhooks.allowedHosts);
  if (callbackRefused)
    throw new ServiceError("invalid_request", `callbackUrl refused: ${callbackRefused}`, { issues: [{ path: "/callbackUrl", message: callbackRefused }] });
  // An edit keeps the time its version was given, within what the policy allows now.
  const ttl = resolveTtl(input.editedBy && request.ttlSeconds !== undefined ? Math.min(request.ttlSeconds, policy.ttl.max) : request.ttlSeconds, policy.ttl);
  if ("error" in ttl) throw new ServiceError("invalid_request", ttl.error, { issues: [{ path: "/ttlSeconds", message: ttl.error }] });

  // Each target's reader holds its read credential only (opened at start: ctx.targets).
  const previews = await Promise.allSettled(request.actions.map((action) => ctx.targets.readerFor(action.target).preview(action)));
  const actions: PlannedAction[] = [];
  const shown: ActionPreview[] = [];
  for (const [i, result] of previews.entries()) {
    if (result.status === "rejected") throw previewFailure(result.reason, i);
    actions.push(result.value.planned as PlannedAction);
    shown.push(result.value.preview);
  }

  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + ttl.seconds * 1000);
  const document: PlanDocument = PlanDocument.parse({
    v: 1,
    id: randomUUID(),
    environment: ctx.config.environment,
    agent: agent.name,
    title: request.title,
    ...(request.reason !== undefined ? { reason: request.reason } : {}),
    ...(request.onBehalfOf !== undefined ? { onBehalfOf: request.onBehalfOf } : {}),
    actions,
    policy: {
      approvers: policy.approvers,
      requiredApprovals: policy.requiredApprovals,
      grantTtlSeconds: policy.grantTtl,
      rule: policyRule(
        request.actions.map((a) => a.target),
        ctx.config.targets,
      ),
      risk,
      // Recorded only when a target keeps the plan out of batches, so other plans hash as before.
      ...(policy.batch ? {} : { batch: false as const }),
      // Likewise only when a target keeps reviewers from editing it.
      ...(policy.edits ? {} : { edits: false as const }),
      // Likewise only when a target lets no delegate act for an approver.
      ...(policy.delegation ? {} : { delegation: false as const }),
    },
    expiresAt: expiresAt.toISOString(),
    ...(replaced ? { supersedes: replaced.id } : {}),
    ...(input.editedBy ? { editedBy: input.editedBy } : {}),
    ...(input.undoes ? { undoes: input.undoes } : {}),
    ...(input.askedBy ? { askedBy: input.askedBy } : {}),
  });
  const hash = fingerprint(document);

  const stored: PlanRow = {
    id: document.id,
    agentId: agent.id,
    hash,
    document,
    preview: { actions: shown },
    status: "pending",
    expiresAt,
    idempotencyKey: request.idempotencyKey ?? null,
    supersedes: replaced?.id ?? null,
    supersededBy: null,
    undoes: input.undoes ?? null,
    undoneBy: null,
    requestDigest,
    rejectReason: null,
    callbackUrl: callbackUrl ?? null,
    grant: null,
    grantExpiresAt: null,
    claimToken: null,
    leaseExpiresAt: null,
    claims: 0,
    outcome: null,
    createdAt: now,
    updatedAt: now,
  };
  return { document, hash, stored };
}

/**
 * Stores the plan with its plan.submitted event in one transaction; false when a plan with its
 * idempotency key was stored first. Without a key nothing stored can collide with it (its id is
 * new), so plan and event go in one statement, a transaction of its own: no BEGIN or COMMIT.
 * A re-plan also `supersede`s its old version in that transaction (after the insert), so the
 * new version exists exactly when the old one was replaced.
 */
async function storePlan(
  ctx: ServiceContext,
  input: {
    values: PgInsertValue<typeof plans>;
    plan: NewPlan;
    guard: AdmitGuard;
    submitted: Omit<Parameters<typeof planEventStatement>[2], "first">;
    keyed: boolean;
    supersede?: (tx: Tx) => Promise<void>;
  },
): Promise<boolean> {
  const { values, submitted, supersede } = input;
  const { db } = ctx.database;
  if (!input.keyed && !supersede) {
    // The hot path: one statement whose text is made once (store-new-plan.ts).
    await storeNewPlan(ctx, { plan: input.plan, guard: input.guard, event: submitted });
    return true;
  }
  if (!input.keyed) {
    return db.transaction(async (tx) => {
      await tx.execute(planEventStatement(ctx, tx, { ...submitted, first: tx.insert(plans).values(values).returning({ id: plans.id }).getSQL() }));
      await supersede!(tx);
      return true;
    });
  }
  return db.transaction(async (tx) => {
    const [inserted] = await tx
      .insert(plans)
      .values(values)
      // Two retries with one key raced past the first lookup: the second stores nothing here
      // (rather than failing on the unique index) and answers with the first's plan.
      .onConflictDoNothing({ target: [plans.agentId, plans.idempotencyKey] })
      .returning({ id: plans.id });
    if (!inserted) return false;
    await tx.execute(planEventStatement(ctx, tx, submitted));
    await supersede?.(tx);
    return true;
  });
}

async function findByIdempotencyKey(ctx: ServiceContext, agentId: string, key: string, requestDigest: string): Promise<PlanView | undefined> {
  const [row] = await ctx.database.db
    .select()
    .from(plans)
    .where(and(eq(plans.agentId, agentId), eq(plans.idempotencyKey, key)));
  if (!row) return undefined;
  if (row.requestDigest !== requestDigest) {
    throw new ServiceError("idempotency_conflict", `idempotencyKey '${key}' was already used for a different plan (${row.id}); use a new key for a new plan`, {
      details: { planId: row.id },
    });
  }
  return planView(ctx.database.db, ctx.config.publicUrl, row, "agent", ctx.redaction);
}

/**
 * An action's kind is the adapter it goes through: a kind this server has no adapter for is
 * refused (422) naming it and the kinds there are, before the request is validated against
 * the kinds' schemas (which would only say the discriminator is wrong).
 */
function refuseUnknownKinds(ctx: ServiceContext, request: unknown): void {
  const actions = (request as { actions?: unknown } | null)?.actions;
  if (!Array.isArray(actions)) return;
  const known = ctx.targets.registry.kinds();
  const unknown = actions.flatMap((action, i) => {
    const kind = (action as { kind?: unknown } | null)?.kind;
    return typeof kind === "string" && !known.includes(kind) ? [{ i, kind }] : [];
  });
  if (unknown.length === 0) return;
  const message = (kind: string) => `no adapter of kind '${kind.slice(0, 60)}'; known kinds: ${known.join(", ")}`;
  throw new ServiceError("unknown_kind", unknown.map(({ i, kind }) => `actions[${i}]: ${message(kind)}`).join("; "), {
    issues: unknown.map(({ i, kind }) => ({ path: `/actions/${i}/kind`, message: message(kind) })),
    details: { kinds: known },
  });
}

/** The configured target an action names, and the adapter of its kind; the target must be of that kind. */
function targetOf(
  ctx: ServiceContext,
  action: ActionRequest,
  i: number,
): { adapter: Adapter<any, any, any>; config: ServiceContext["config"]["targets"][string] } {
  const config = ctx.config.targets[action.target];
  if (!config) {
    const known = Object.keys(ctx.config.targets);
    throw new ServiceError(
      "unknown_target",
      `actions[${i}] names target '${action.target}', which is not configured; known targets: ${known.length ? known.join(", ") : "(none)"}`,
      {
        issues: [{ path: `/actions/${i}/target`, message: `unknown target '${action.target}'` }],
      },
    );
  }
  if (config.adapter !== action.kind) {
    const same = Object.entries(ctx.config.targets)
      .filter(([, t]) => t.adapter === action.kind)
      .map(([name]) => name);
    throw new ServiceError(
      "unknown_target",
      `actions[${i}] is a ${action.kind} action, but target '${action.target}' is a ${config.adapter} target; ${action.kind} targets: ${same.length ? same.join(", ") : "(none)"}`,
      {
        issues: [{ path: `/actions/${i}/target`, message: `target '${action.target}' takes ${config.adapter} actions, not ${action.kind}` }],
      },
    );
  }
  return { adapter: ctx.targets.adapterFor(action.kind), config };
}

/** An adapter's refusal to preview (or address) an action: 422 preview_failed naming the target, path and what is wrong. */
function previewFailure(err: unknown, index: number): ServiceError {
  const read = err instanceof TargetReadError ? err : err instanceof AdapterError && err.cause instanceof TargetReadError ? err.cause : undefined;
  if (read) {
    return new ServiceError("preview_failed", `preview of actions[${index}] failed: ${read.message}`, {
      issues: [{ path: `/actions/${index}`, message: read.message }],
      details: {
        target: read.target,
        path: read.path,
        ...(read.answer ? { targetAnswer: { status: read.answer.status, body: redactText(read.answer.body) } } : {}),
      },
    });
  }
  if (err instanceof AdapterError) {
    const message = redactText(err.message);
    return new ServiceError("preview_failed", `preview of actions[${index}] failed: ${message}`, {
      issues: [{ path: `/actions/${index}`, message }],
      details: { target: err.target, ...(err.path !== undefined ? { path: err.path } : {}), errorClass: err.errorClass },
    });
  }
  throw err;
}

/** Where each risk level for this target comes from, as config keys reviewers can look up. */
function riskRulesOf(defaults: PolicyDefaultsConfig, target: string, override: PolicyOverrideConfig | undefined): RiskRules {
  const byOp: RiskRules["byOp"] = {};
  for (const [source, ops] of [
    ["defaults.riskByOp", defaults.riskByOp],
    [`targets.${target}.policy.riskByOp`, override?.riskByOp],
  ] as const) {
    for (const [op, level] of Object.entries(ops ?? {})) if (level) byOp[op] = { level, rule: `${source}.${op}` };
  }
  return {
    risk: override?.risk ? { level: override.risk, rule: `targets.${target}.policy.risk` } : { level: defaults.risk, rule: "defaults.risk" },
    byOp,
  };
}

/** The config rules the approvers and quorum come from: each target's own policy where it sets them, else the defaults. */
function policyRule(targetNames: string[], targets: ServiceContext["config"]["targets"]): string {
  const rules = [
    ...new Set(
      targetNames.map((name) => {
        const own = targets[name]?.policy;
        return own?.approvers !== undefined || own?.requiredApprovals !== undefined ? `targets.${name}.policy` : "defaults";
      }),
    ),
  ];
  return rules.join(" + ");
}
