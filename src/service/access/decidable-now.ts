import { and, eq, inArray } from "drizzle-orm";
import { requestersOf } from "../../plan/requesters.ts";
import type { PlanDocument, PlanStatus } from "../../plan/schema.ts";
import { approverGroups } from "../../policy/approvers.ts";
import { whyMayNot } from "../../policy/may-act.ts";
import { decisions } from "../../store/schema.ts";
import type { ServiceContext } from "../context.ts";
import { delegationsHeldBy, personOn } from "./acting-person.ts";
import { membershipOf, type Membership } from "./approver-groups.ts";

/** A plan as a list reads it: enough for the one rule. */
export interface ListedPlan {
  id: string;
  status: PlanStatus;
  hash: string;
  expiresAt: Date;
  document: unknown;
}

/**
 * The plans of `rows` this person may decide now, in their order: the one rule asked per plan,
 * with the votes so far, the person's user groups and the delegations they hold (a delegate
 * decides for the person away). `unchecked`: groups Slack could not answer for just now (their
 * plans are left out, and a door may say so). Every list of "what waits for you" asks this.
 */
export async function decidableNow<T extends ListedPlan>(
  ctx: Pick<ServiceContext, "database" | "directory" | "clock">,
  userId: string,
  rows: readonly T[],
): Promise<{ plans: T[]; unchecked: Membership["unchecked"] }> {
  if (rows.length === 0) return { plans: [], unchecked: [] };
  const now = ctx.clock();
  const votes = await ctx.database.db
    .select({ planId: decisions.planId, userId: decisions.userId, for: decisions.forUser })
    .from(decisions)
    .where(
      and(
        inArray(
          decisions.planId,
          rows.map((r) => r.id),
        ),
        eq(decisions.verdict, "approve"),
      ),
    );
  const docs = rows.map((r) => r.document as PlanDocument);
  const groups = docs.flatMap((d) => approverGroups(d.policy));
  const { memberOf, unchecked } = await membershipOf(ctx, userId, groups);
  const held = await delegationsHeldBy(ctx, userId, groups);
  const plans = rows.filter((r, i) => {
    const doc = docs[i]!;
    const theirs = votes.filter((v) => v.planId === r.id);
    const facts = {
      status: r.status,
      expiresAt: r.expiresAt,
      hash: r.hash,
      requesters: requestersOf(doc),
      policy: doc.policy,
      approvals: theirs.map((v) => v.userId),
      actedFor: theirs.flatMap((v) => (v.for ? [v.for] : [])),
    };
    const person = personOn({ userId, memberOf }, held, { policy: doc.policy, targets: doc.actions.map((a) => a.target) });
    return whyMayNot(person, facts, { verb: "decide" }, now) === undefined;
  });
  return { plans, unchecked: [...unchecked, ...held.unchecked] };
}
