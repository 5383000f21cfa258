import { sql, type SQL } from "drizzle-orm";
import { PLAN_STATUSES, type PlanStatus } from "../plan/status.ts";
import { plans } from "./schema.ts";

/**
 * A plan-status test with the statuses written into the statement's text, not sent as parameters.
 * PostgreSQL may run a named statement on a plan made once for any parameter values (a generic
 * plan: named-statements.ts). Such a plan cannot know that `status = $1` means the few pending or
 * approved plans rather than the million applied ones, nor use a partial index whose predicate is
 * a status: at 1 M plans, with the statuses as parameters, the executor's claim took 436–447 ms
 * on its generic plan against 0.13–0.18 custom, the Slack home list 143–286 ms against 2.5, a
 * rare-status filter 60–112 ms against 1.4-2.9; written in, generic and custom plans are the same
 * (bench/scans/generic.sql). Statuses come from PLAN_STATUSES only, in its order and each once, so
 * the text stays one of a few and nothing a caller passes reaches it unchecked.
 */
export function statusIn(statuses: readonly PlanStatus[]): SQL {
  if (statuses.length === 0) throw new Error("statusIn needs at least one plan status");
  const unknown = statuses.filter((s) => !(PLAN_STATUSES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`not plan statuses: ${unknown.join(", ")}`);
  // In PLAN_STATUSES' order, each once: a browser's `?status=b,a,a` is the same statement as `a,b`,
  // so nobody can make a connection keep a new named statement per way of writing a filter.
  const wanted = PLAN_STATUSES.filter((s) => statuses.includes(s));
  const list = sql.raw(wanted.map((s) => `'${s}'`).join(", "));
  return wanted.length === 1 ? sql`${plans.status} = ${list}` : sql`${plans.status} IN (${list})`;
}

export const statusIs = (status: PlanStatus): SQL => statusIn([status]);
