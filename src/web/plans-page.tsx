/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { shortHash } from "../plan/fingerprint.ts";
import { PLAN_STATUSES } from "../plan/status.ts";
import type { WebSession } from "../service/login-links.ts";
import type { PlanView } from "../service/plan-view.ts";
import { Layout, StatusBadge } from "./layout.tsx";
import { mayDecideNow } from "./plan-page.tsx";

export function PlansPage(props: { plans: PlanView[]; session: WebSession | undefined; filter: string | undefined; memberOf: readonly string[] }) {
  const query = props.filter ? `?status=${encodeURIComponent(props.filter)}` : "";
  return (
    <Layout title="Plans" session={props.session}>
      <h1>Plans</h1>
      <nav class="filters" aria-label="Filter by status">
        <a href="/plans" class={props.filter ? "" : "on"}>All</a>
        {PLAN_STATUSES.map((s) => <a href={`/plans?status=${s}`} class={props.filter === s ? "on" : ""}>{s}</a>)}
      </nav>
      <div data-live="/plans/live" data-fragment={`/plans${query}${query ? "&" : "?"}fragment=1`}>
        <PlansTable plans={props.plans} session={props.session} memberOf={props.memberOf} />
      </div>
    </Layout>
  );
}

/** Pending plans first (those you may decide marked), then the rest, newest first. */
export function PlansTable(props: { plans: PlanView[]; session: WebSession | undefined; memberOf: readonly string[] }) {
  const pending = props.plans.filter((p) => p.status === "pending");
  const rest = props.plans.filter((p) => p.status !== "pending");
  if (props.plans.length === 0) return <p class="muted">No plans here yet. Agents submit them with <code>POST /v1/plans</code>.</p>;
  return (
    <>
      <h2>Waiting for a decision ({pending.length})</h2>
      {pending.length === 0 ? <p class="muted">Nothing is waiting.</p> : <Rows plans={pending} session={props.session} memberOf={props.memberOf} />}
      <h2>Recent</h2>
      {rest.length === 0 ? <p class="muted">None yet.</p> : <Rows plans={rest} session={props.session} memberOf={props.memberOf} />}
    </>
  );
}

function Rows(props: { plans: PlanView[]; session: WebSession | undefined; memberOf: readonly string[] }) {
  return (
    <table class="plans">
      <thead><tr><th>Plan</th><th>Status</th><th>Agent</th><th>Targets</th><th>Expires</th><th>Hash</th></tr></thead>
      <tbody>
        {props.plans.map((p) => (
          <tr>
            <td>
              <a href={`/plans/${p.id}`}>{p.plan.title}</a>
              {mayDecideNow(props.session, p, props.memberOf) ? <> <span class="mine">· yours to decide</span></> : null}
            </td>
            <td><StatusBadge status={p.status} /></td>
            <td>{p.plan.agent}</td>
            <td>{[...new Set(p.plan.actions.map((a) => a.target))].join(", ")}</td>
            <td>{p.status === "pending" ? <span data-expires={p.expiresAt}>…</span> : <span class="muted">—</span>}</td>
            <td class="hash">{shortHash(p.hash)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
