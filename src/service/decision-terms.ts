import { eq } from "drizzle-orm";
import type { PlanDocument } from "../plan/schema.ts";
import type { Database } from "../store/db.ts";
import { plans } from "../store/schema.ts";

/** What a decision on a plan is judged by, from its document: who may approve, for whom, where. */
export type DecisionTerms = Pick<PlanDocument, "policy" | "onBehalfOf" | "environment">;

/**
 * Plans decided on recently, per database. A plan's document never changes (migration 0001's
 * trigger refuses it), so what was read once stays true: a click needs no read of the document
 * before its transaction (where group membership is looked up, without holding a lock) nor in
 * it. Bounded, oldest dropped first; a plan removed since (purge) is found missing by the
 * decision's locking read, not here.
 */
const MAX_PLANS = 2000;
const cached = new WeakMap<Database, Map<string, DecisionTerms>>();

function cacheOf(database: Database): Map<string, DecisionTerms> {
  let map = cached.get(database);
  if (!map) cached.set(database, (map = new Map()));
  return map;
}

/** Remember a plan's terms, e.g. the moment it is stored, so the first click reads nothing extra. */
export function rememberDecisionTerms(database: Database, planId: string, document: PlanDocument): DecisionTerms {
  const map = cacheOf(database);
  const terms: DecisionTerms = { policy: document.policy, onBehalfOf: document.onBehalfOf, environment: document.environment };
  map.delete(planId);
  map.set(planId, terms);
  if (map.size > MAX_PLANS) map.delete(map.keys().next().value!);
  return terms;
}

/** The plan's terms, read from its document the first time; undefined when there is no such plan. */
export async function decisionTermsOf(database: Database, planId: string): Promise<DecisionTerms | undefined> {
  const known = cacheOf(database).get(planId);
  if (known) return known;
  const [row] = await database.db.select({ document: plans.document }).from(plans).where(eq(plans.id, planId));
  return row && rememberDecisionTerms(database, planId, row.document as PlanDocument);
}
