import { sql } from "drizzle-orm";
import { alikeOffers, type AlikeOffer } from "../../plan/alike.ts";
import { approverGroups, isUserGroup } from "../../policy/approvers.ts";
import { outbox, plans } from "../../store/schema.ts";
import type { Membership } from "../access/approver-groups.ts";
import type { ServiceContext } from "../context.ts";
import { decisionTermsOfPlans } from "../lifecycle/decision-terms.ts";
import { HOME_SINK } from "../records/home-events.ts";
import { sinkLane } from "../records/outbox-lanes.ts";
import { plansWaitingFor, type WaitingPlan } from "./plans-for-person.ts";

/** What one person's Home tab shows: the plans waiting for them (the one rule, see plans-for-person.ts). */
export interface HomeTab {
  plans: WaitingPlan[];
  /** Groups of two or more alike plans among all that wait for them, offered to review together. */
  alike: AlikeOffer[];
  total: number;
  uncheckedGroups: string[];
  listUrl: string;
}

/** The first `shown` plans waiting for this person, soonest expiry first, how many wait in all, and which of them are alike. */
export async function homeTabFor(ctx: ServiceContext, { userId, shown }: { userId: string; shown: number }): Promise<HomeTab> {
  // Every plan looked at, not only those shown: alike plans further down the list count too.
  const { plans: waiting, total, uncheckedGroups } = await plansWaitingFor(ctx, userId, Number.POSITIVE_INFINITY, "soonest");
  return { plans: waiting.slice(0, shown), alike: alikeOffers(waiting), total, uncheckedGroups, listUrl: `${ctx.config.publicUrl}/plans?status=pending` };
}

/** Someone whose Home a plan event may change, and how the plan names them: their own id, or a group they are in. */
export interface Decider {
  userId: string;
  via: string;
}

/**
 * Who may decide this plan, as far as can be known now: the users its recorded policy lists and
 * the members of its approver groups looked up now. The person it is for never decides it, so
 * their Home does not change. Undefined when the plan is gone.
 */
export async function decidersOf(
  ctx: Pick<ServiceContext, "database" | "directory">,
  planId: string,
): Promise<{ deciders: Decider[]; unchecked: Membership["unchecked"] } | undefined> {
  return decidersOfPlans(ctx, [planId]);
}

/**
 * decidersOf for several plans at once (a batch of Home rows): everyone who may decide any of
 * them, each once (named the way the first plan that lists them does), and each approver group
 * looked up once. From the plans' decision terms, remembered or read in one statement
 * (decision-terms.ts). Undefined when every plan is gone (one purged since this process
 * remembered it costs a republish, which is harmless: a Home is rebuilt from the database).
 */
export async function decidersOfPlans(
  ctx: Pick<ServiceContext, "database" | "directory">,
  planIds: readonly string[],
): Promise<{ deciders: Decider[]; unchecked: Membership["unchecked"] } | undefined> {
  if (planIds.length === 0) return undefined;
  const terms = await decisionTermsOfPlans(ctx.database, planIds);
  if (terms.size === 0) return undefined;
  const deciders = new Map<string, Decider>();
  const unchecked: Membership["unchecked"] = [];
  const members = new Map<string, Promise<readonly string[]>>();
  // In the order the plans are given: a person several name is named the way the first does.
  for (const doc of planIds.flatMap((id) => terms.get(id) ?? [])) {
    const own = new Map<string, Decider>();
    for (const id of doc.policy.approvers) if (!isUserGroup(id)) own.set(id, { userId: id, via: id });
    for (const group of new Set(approverGroups(doc.policy))) {
      if (!ctx.directory) {
        if (!unchecked.some((u) => u.group === group)) unchecked.push({ group, error: "Slack is not connected" });
        continue;
      }
      const looked = members.get(group) ?? ctx.directory.membersOf(group);
      members.set(group, looked);
      try {
        for (const member of await looked) if (!own.has(member)) own.set(member, { userId: member, via: group });
      } catch (err) {
        if (!unchecked.some((u) => u.group === group)) unchecked.push({ group, error: (err as Error).message });
      }
    }
    for (const requester of doc.requesters) own.delete(requester);
    for (const [id, d] of own) if (!deciders.has(id)) deciders.set(id, d);
  }
  return { deciders: [...deciders.values()], unchecked };
}

/**
 * Of these deciders, those a later Home row will republish anyway: a row after `rowId` that no
 * worker has picked up yet (attempts = 0, so its rebuild reads the database after this moment),
 * for a plan naming them the same way (and not made for them). Publishing to them now would be
 * overtaken: skipping it is how a burst of transitions costs a person one views.publish instead
 * of one per transition.
 */
export async function coveredLater(ctx: Pick<ServiceContext, "database">, rowId: number, deciders: readonly Decider[]): Promise<Set<string>> {
  const names = [...new Set(deciders.flatMap((d) => [d.userId, d.via]))];
  if (names.length === 0) return new Set();
  // The document is text (see schema.ts); json (unlike jsonb) accepts whatever text it holds. Each
  // name stops at the first later row naming it, which in a burst is the next one, so the probe
  // costs the same with 5 rows queued or 500. The Home lane and its priority make the later rows
  // a range of outbox_lane_order in id order: by kind alone the planner would walk other lanes'
  // backlogs too (1.5 ms a probe on average under the intake bench, 2.4–2.7 ms with 1 300–2 100
  // queued Slack rows filtered out).
  const { lane, priority } = sinkLane(HOME_SINK);
  const named = await ctx.database.rows<{ name: string }>(sql`
    SELECT n.name FROM (VALUES ${sql.join(
      names.map((n) => sql`(${n})`),
      sql`, `,
    )}) AS n(name)
    WHERE EXISTS (
      SELECT 1 FROM ${outbox} o JOIN ${plans} p ON p.id = o.plan_id
      WHERE o.lane = ${lane} AND o.priority = ${priority} AND o.id > ${rowId} AND o.attempts = 0
        AND o.delivered_at IS NULL AND o.dead_at IS NULL
        AND n.name NOT IN (SELECT r FROM (VALUES (p.document::json ->> 'onBehalfOf'), (p.document::json -> 'editedBy' ->> 'userId'), (p.document::json -> 'askedBy' ->> 'userId')) AS q(r) WHERE r IS NOT NULL)
        AND EXISTS (SELECT 1 FROM json_array_elements_text(p.document::json -> 'policy' -> 'approvers') AS a(name) WHERE a.name = n.name))`);
  const later = new Set(named.map((r) => r.name));
  return new Set(deciders.filter((d) => later.has(d.userId) || later.has(d.via)).map((d) => d.userId));
}
