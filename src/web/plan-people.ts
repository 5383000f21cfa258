import type { ReviewedPlan } from "../service/review/index.ts";

/** Every person a plan page may name (anyone acting for another included), so the page reads their names in one query. */
export function peopleOnPlanPage(reviewed: ReviewedPlan, readerId: string | undefined): string[] {
  const { plan, events } = reviewed;
  const doc = plan.plan;
  const acts = [...plan.approvals, plan.rejection, plan.revocation].flatMap((a) => (a ? [a.userId, a.for] : []));
  const actors = events.flatMap((e) => {
    const actor = e.actor as { userId?: unknown; for?: unknown } | null;
    return [actor?.userId, actor?.for];
  });
  const ids = [
    readerId,
    doc.onBehalfOf,
    doc.editedBy?.userId,
    doc.askedBy?.userId,
    plan.supersededBy?.editedBy?.userId,
    ...doc.policy.approvers,
    ...acts,
    ...actors,
  ];
  return [...new Set(ids.filter((id): id is string => typeof id === "string"))];
}
