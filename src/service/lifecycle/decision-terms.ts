import { eq, inArray } from "drizzle-orm";
import { requestersOf } from "../../plan/requesters.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import type { Database } from "../../store/db.ts";
import { plans } from "../../store/schema.ts";

/**
 * What a decision on a plan is judged by, apart from its status and votes: who may approve, for
 * whom, where, the exact hash and the expiry. All fixed when the plan is stored.
 */
export type DecisionTerms = Pick<PlanDocument, "policy" | "environment"> & {
  requesters: string[];
  /** The targets its actions touch: a delegation reaches the plan only if it covers every one. */
  targets: string[];
  hash: string;
  expiresAt: Date;
};

/** A plan's actions, as the Approve re-check reads their targets. */
export type PlannedActions = PlanDocument["actions"];

/**
 * Plans decided on recently, per database. A plan's document, hash and expiry never change
 * (plans_immutable refuses it), so what was read once stays true: a click needs no read
 * of them before its transaction (where group membership is looked up and the targets re-read,
 * without holding a lock) nor in it. Bounded, oldest dropped first; a plan removed since (purge)
 * is found missing by the decision's locking read, not here.
 * Actions are kept for fewer plans: a document may be up to 256 KiB, and they only spare a
 * click the read of its plan's document before the targets are re-read.
 */
const MAX_PLANS = 2000;
const MAX_ACTIONS = 256;
interface Remembered {
  terms: Map<string, DecisionTerms>;
  actions: Map<string, PlannedActions>;
}
const remembered = new WeakMap<Database, Remembered>();

function rememberedIn(database: Database): Remembered {
  let found = remembered.get(database);
  if (!found) remembered.set(database, (found = { terms: new Map(), actions: new Map() }));
  return found;
}

function put<T>(map: Map<string, T>, key: string, value: T, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value!);
}

/** Remember a stored plan's terms and actions, e.g. the moment it is stored, so its first click reads nothing extra. */
export function rememberDecisionTerms(database: Database, planId: string, plan: { document: PlanDocument; hash: string; expiresAt: Date }): DecisionTerms {
  const { document } = plan;
  const found = rememberedIn(database);
  const terms: DecisionTerms = {
    policy: document.policy,
    requesters: requestersOf(document),
    targets: [...new Set(document.actions.map((a) => a.target))],
    environment: document.environment,
    hash: plan.hash,
    expiresAt: plan.expiresAt,
  };
  put(found.terms, planId, terms, MAX_PLANS);
  put(found.actions, planId, document.actions, MAX_ACTIONS);
  return terms;
}

/** The plan's terms, read from its document the first time; undefined when there is no such plan. */
export async function decisionTermsOf(database: Database, planId: string): Promise<DecisionTerms | undefined> {
  return rememberedIn(database).terms.get(planId) ?? (await readAndRemember(database, [planId])).get(planId)?.terms;
}

/**
 * The terms of these plans, by id: those remembered, and the rest read from their documents in
 * one statement (and remembered); a plan that does not exist is left out. The App Home's
 * deliveries take the rows of plans just stored, by this process as a rule, so they read no
 * document (a take of 100 rows read 100 of them, 2 KiB and a JSON parse apiece, under the intake
 * bench).
 */
export async function decisionTermsOfPlans(database: Database, planIds: readonly string[]): Promise<Map<string, DecisionTerms>> {
  const { terms } = rememberedIn(database);
  const found = new Map<string, DecisionTerms>();
  const missing: string[] = [];
  for (const id of new Set(planIds)) {
    const known = terms.get(id);
    if (known) found.set(id, known);
    else missing.push(id);
  }
  if (missing.length === 0) return found;
  for (const [id, read] of await readAndRemember(database, missing)) found.set(id, read.terms);
  return found;
}

/** The plan's actions, read from its document when not remembered; undefined when there is no such plan. */
export async function plannedActionsOf(database: Database, planId: string): Promise<PlannedActions | undefined> {
  return rememberedIn(database).actions.get(planId) ?? (await readAndRemember(database, [planId])).get(planId)?.actions;
}

/**
 * These plans' documents, read in one statement and remembered; a plan that does not exist is
 * left out. One plan (a click's) is read by key, the statement it always was.
 */
async function readAndRemember(database: Database, planIds: readonly string[]): Promise<Map<string, { terms: DecisionTerms; actions: PlannedActions }>> {
  const rows = await database.db
    .select({ id: plans.id, document: plans.document, hash: plans.hash, expiresAt: plans.expiresAt })
    .from(plans)
    .where(planIds.length === 1 ? eq(plans.id, planIds[0]!) : inArray(plans.id, [...planIds]));
  return new Map(
    rows.map((row) => {
      const document = row.document as PlanDocument;
      return [row.id, { terms: rememberDecisionTerms(database, row.id, { document, hash: row.hash, expiresAt: row.expiresAt }), actions: document.actions }];
    }),
  );
}
