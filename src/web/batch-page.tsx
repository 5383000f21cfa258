/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { AlikeOffer } from "../plan/alike.ts";
import { shortHash } from "../plan/fingerprint.ts";
import { MAX_STATED_REASON_CHARS } from "../service/access/index.ts";
import type { BatchDecision, BatchPlan, BatchPlanResult, BatchView } from "../service/batch/index.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import { ActionChanges } from "./change-rows.tsx";
import { Layout, StatusBadge } from "./layout.tsx";

const REJECT_FORM = "batch-reject-form";
const clockTime = (iso: string) => `${iso.slice(11, 16)} UTC`;

/** Where the list's "Review N like plans" leads: the batch opened from the first of them. */
export const alikeHref = (like: string) => `/plans/${like}/alike`;

/** On the list: the groups of alike plans the reader may decide, each a link that opens a batch of them. */
export function AlikeOffers(props: { offers: readonly AlikeOffer[] | undefined }) {
  const offers = props.offers ?? [];
  if (offers.length === 0) return null;
  return (
    <section class="card" aria-label="Alike plans">
      <p class="muted">Alike plans you may decide together (each is still decided by itself, at the version shown):</p>
      <ul>
        {offers.map((o) => (
          <li>
            <a href={alikeHref(o.like)}>Review {o.count} like plans</a> <span class="muted">· {o.summary}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * The batch confirmation page: every plan the batch holds, at the version it binds to, with its
 * change masked as previews are; Approve-all and Reject-all (one reason for all) in a bar at the
 * bottom of the window, as on a plan's page.
 */
export function BatchPage(props: { batch: BatchView; session: WebSession }) {
  const { batch } = props;
  const count = batch.plans.length;
  const open = batch.plans.filter((p) => p.status === "pending").length;
  return (
    <Layout title={`Review ${count} like plans`} session={props.session}>
      <p>
        <a href="/plans">← All plans</a>
      </p>
      <h1>Review {count} like plans</h1>
      <p>
        From <code>{batch.agent}</code>: {batch.alike}
      </p>
      <p class="muted">
        Approve all or reject all: each plan is decided by itself, at the version shown, as if you clicked it on its page. This batch may be decided on until{" "}
        <span class="nowrap">{clockTime(batch.expiresAt)}</span>, ten minutes after it was opened.{" "}
        {open < count ? `${count - open} of them are no longer pending.` : ""}
      </p>
      {batch.more > 0 ? (
        <p class="notice ok" role="status">
          {batch.more} more alike {batch.more === 1 ? "plan waits" : "plans wait"} for you; they are not in this batch. Decide these, then open the like plans
          again from the list.
        </p>
      ) : null}
      <div id="plans">
        {batch.plans.map((plan, i) => (
          <BatchPlanCard plan={plan} index={i} />
        ))}
      </div>
      <form id={REJECT_FORM} method="post" action={`/batches/${batch.id}/reject`} class="card reject-reason">
        <input type="hidden" name="_csrf" value={props.session.csrfToken} />
        <label for="reason">Reason for rejecting all {count}</label>
        <textarea
          id="reason"
          name="reason"
          required
          maxlength={MAX_STATED_REASON_CHARS}
          placeholder="Why reject them? Every plan's agent and requester see this."
        ></textarea>
      </form>
      <section class="decision-bar" aria-label="Decision">
        <div class="decision-bar-inner">
          <a href="#plans" class="change-count">
            {count} {count === 1 ? "plan" : "plans"}
          </a>
          <form method="post" action={`/batches/${batch.id}/approve`} class="inline">
            <input type="hidden" name="_csrf" value={props.session.csrfToken} />
            <button type="submit" class="approve">
              Approve all
            </button>
          </form>
          <button type="submit" form={REJECT_FORM} class="reject">
            Reject all
          </button>
        </div>
      </section>
    </Layout>
  );
}

function BatchPlanCard(props: { plan: BatchPlan; index: number }) {
  const { plan } = props;
  return (
    <section class="card" aria-label={`Plan ${props.index + 1}`}>
      <h2>
        {props.index + 1}. <a href={`/plans/${plan.planId}`}>{plan.title}</a>
      </h2>
      <p>
        {plan.status ? <StatusBadge status={plan.status} /> : null} <span class="muted">version</span>{" "}
        <span class="hash" title={plan.hash}>
          {shortHash(plan.hash)}
        </span>
        {plan.risk && plan.risk !== "low" ? (
          <>
            {" "}
            <span class={`badge risk-${plan.risk}`}>{plan.risk} risk</span>
          </>
        ) : null}
        {plan.expiresAt ? (
          <span class="muted">
            {" "}
            · <span class="nowrap">expires {clockTime(plan.expiresAt)}</span>
          </span>
        ) : null}
      </p>
      {plan.actions.map((action) => (
        <>
          <p>
            <span class="badge s-approved">{action.op}</span> <strong>{action.target}</strong> <code>{action.path}</code>
          </p>
          <ActionChanges changes={action.changes} />
        </>
      ))}
    </section>
  );
}

/** What became of each plan after Approve-all or Reject-all. */
export function BatchDecidedPage(props: { decision: BatchDecision; session: WebSession }) {
  const { decision } = props;
  const verb = decision.verdict === "approve" ? "Approved" : "Rejected";
  return (
    <Layout title={`${verb} like plans`} session={props.session}>
      <p>
        <a href="/plans">← All plans</a>
      </p>
      <h1>
        {verb} like plans: {tally(decision)}
      </h1>
      <p class="muted">Each plan was decided by itself, at the version the batch showed; a refused plan is unchanged.</p>
      <table class="plans stacks">
        <colgroup>
          <col />
          <col class="result" />
          <col class="detail" />
        </colgroup>
        <thead>
          <tr>
            <th>Plan</th>
            <th>Result</th>
            <th>Why</th>
          </tr>
        </thead>
        <tbody>
          {decision.outcomes.map((o, i) => (
            <tr>
              <td data-label="Plan">
                <span>
                  {i + 1}. <a href={`/plans/${o.planId}`}>{o.title}</a> <span class="hash muted">{shortHash(o.hash)}</span>
                </span>
              </td>
              <td data-label="Result">
                <span class="nowrap">{resultWord(o.result)}</span>
              </td>
              <td data-label="Why">{resultWhy(o.result, o.recheckFailed) ? <span>{resultWhy(o.result, o.recheckFailed)}</span> : null}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Layout>
  );
}

function tally(decision: BatchDecision): string {
  const counts = new Map<string, number>();
  for (const o of decision.outcomes) counts.set(resultWord(o.result), (counts.get(resultWord(o.result)) ?? 0) + 1);
  return [...counts].map(([word, n]) => `${n} ${word.replace(/ \(.*\)$/, "")}`).join(", ") || "nothing to decide";
}

function resultWord(result: BatchPlanResult): string {
  switch (result.kind) {
    case "approved":
      return "approved";
    case "counted":
      return `approval counted (${result.approvals} of ${result.requiredApprovals})`;
    case "rejected":
      return "rejected";
    case "refused":
      return "refused";
    case "failed":
      return "not decided";
  }
}

/** Refusals a person reads often, in a few words; the rest show the service's own message. */
const REFUSED: Partial<Record<string, string>> = {
  plan_expired: "It expired before the batch was decided.",
  already_decided: "It was already decided",
  hash_mismatch: "It changed since the batch showed it.",
  self_approval: "It was requested on your behalf, or you edited it or asked for it, so someone else must decide it.",
  not_an_approver: "You are not one of its approvers.",
  already_voted: "You already approved it; one person counts once.",
  approver_check_failed: "Slack could not confirm your user groups just now.",
  not_found: "It no longer exists.",
};

function resultWhy(result: BatchPlanResult, recheckFailed: string | undefined): string {
  if (result.kind === "refused") {
    const said = REFUSED[result.code];
    const text = result.code === "already_decided" ? `${said} (${result.status ?? "decided"}).` : (said ?? result.message);
    return `${result.code}: ${text}`;
  }
  if (result.kind === "failed") return result.message;
  return recheckFailed ? `Recorded, but its target could not be re-read at the click (${recheckFailed}); the executor re-checks before writing.` : "";
}
