import { approverGroups, names, userGroupsIn, type Person } from "../../policy/approvers.ts";
import { whyMayNot, type PlanFacts, type Refusal } from "../../policy/may-act.ts";
import { requestersOf } from "../../plan/requesters.ts";
import type { PlanDocument } from "../../plan/schema.ts";
import { membershipOf } from "./approver-groups.ts";
import { delegationsHeldBy, personOn } from "./acting-person.ts";
import type { ServiceContext } from "../context.ts";
import type { PlanView } from "../lifecycle/plan-view.ts";

/**
 * Why a person may not decide a plan now, as a door shows it: the rule's refusal, or that Slack
 * could not say whether they are in one of its approver groups.
 */
export type DecisionRefusal = Refusal | { code: "approver_check_failed"; groups: string[] };

/** A person asking, as the service sees them: who they are (a door has verified it). */
export interface Reader {
  userId: string;
}

/**
 * What one person may do with some plans: their group memberships are looked up once for every
 * group the question involves (admins, readers, the plans' approvers), and the delegations they
 * hold with it when plans are asked about, then the one rule answers per plan. Groups Slack could
 * not answer for count as "not a member", and say so.
 */
export async function rightsOf(ctx: ServiceContext, reader: Reader, documents: readonly PlanDocument[]) {
  const rights = { readers: ctx.config.browser.readers, admins: ctx.config.admins };
  const groups = userGroupsIn([...rights.admins, ...(rights.readers ?? []), ...documents.flatMap((d) => d.policy.approvers)]);
  const { memberOf, unchecked } = await membershipOf(ctx, reader.userId, groups);
  const held = documents.length > 0 ? await delegationsHeldBy(ctx, reader.userId, userGroupsIn(documents.flatMap((d) => d.policy.approvers))) : undefined;
  const base: Person = { userId: reader.userId, memberOf };
  /** The reader on one plan, acting for whoever delegated to them for its targets. */
  const on = (doc: PlanDocument): Person => personOn(base, held, { policy: doc.policy, targets: doc.actions.map((a) => a.target) });
  const uncheckedGroups = [...new Set([...unchecked, ...(held?.unchecked ?? [])].map((u) => u.group))];
  const now = ctx.clock();
  return {
    uncheckedGroups,
    /** Reads every plan whatever its approvers: an admin, a listed reader, or no readers list at all. */
    readsEverything: rights.readers === undefined || names(rights.admins, base) || names(rights.readers, base),
    /** Named by the top-level `admins` (by id or through a user group): may operate Countersign, e.g. retry a dead delivery. */
    isAdmin: names(rights.admins, base),
    /** Why not read (documents' approvals do not matter to reading). */
    whyMayNotRead(doc: PlanDocument, plan: Pick<PlanFacts, "status" | "expiresAt" | "hash">): Refusal | undefined {
      return whyMayNot(on(doc), { ...plan, requesters: requestersOf(doc), policy: doc.policy, approvals: [] }, { verb: "read", rights }, now);
    },
    /** Why not revoke now, for showing the revoke form: admins may, and those who may decide it. */
    whyMayNotRevoke(view: PlanView): Refusal | undefined {
      return whyMayNot(on(view.plan), factsOf(view), { verb: "revoke", admins: rights.admins }, now);
    },
    /** Why not decide now, for showing buttons. */
    whyMayNotDecide(view: PlanView): DecisionRefusal | undefined {
      const refusal = whyMayNot(on(view.plan), factsOf(view), { verb: "decide" }, now);
      const couldNotCheck = approverGroups(view.plan.policy).filter((g) => uncheckedGroups.includes(g));
      if (refusal?.code === "not_an_approver" && couldNotCheck.length > 0) return { code: "approver_check_failed", groups: couldNotCheck };
      return refusal;
    },
  };
}

export function factsOf(view: PlanView): PlanFacts {
  return {
    status: view.status,
    expiresAt: new Date(view.expiresAt),
    hash: view.hash,
    requesters: requestersOf(view.plan),
    policy: view.plan.policy,
    approvals: view.approvals.map((a) => a.userId),
    actedFor: view.approvals.flatMap((a) => (a.for ? [a.for] : [])),
  };
}
