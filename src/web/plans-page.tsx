/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { shortHash } from "../plan/fingerprint.ts";
import { PLAN_STATUSES } from "../plan/status.ts";
import type { WebSession } from "../service/login-links.ts";
import type { PlanForReader } from "../service/review-plan.ts";
import { Layout, StatusBadge } from "./layout.tsx";

/** `version` is where all plans stood when this list was read (PlanSignals.version); the live stream starts from it. */
export function PlansPage(props: { plans: PlanForReader[]; session: WebSession | undefined; filter: string | undefined; version: string }) {
  const query = props.filter ? `?status=${encodeURIComponent(props.filter)}` : "";
  return (
    <Layout title="Plans" session={props.session}>
      <h1>Plans</h1>
      <nav class="filters" aria-label="Filter by status">
        <a href="/plans" class={props.filter ? "" : "on"}>All</a>
        {PLAN_STATUSES.map((s) => <a href={`/plans?status=${s}`} class={props.filter === s ? "on" : ""}>{s}</a>)}
      </nav>
      <div data-live={`/plans/live?v=${encodeURIComponent(props.version)}`} data-fragment={`/plans${query}${query ? "&" : "?"}fragment=1`}>
        <PlansTable plans={props.plans} session={props.session} />
      </div>
    </Layout>
  );
}

/** Pending plans first (those you may decide marked), then the rest, newest first. */
export function PlansTable(props: { plans: PlanForReader[]; session: WebSession | undefined }) {
  const pending = props.plans.filter((p) => p.status === "pending");
  const rest = props.plans.filter((p) => p.status !== "pending");
  if (props.plans.length === 0) return <p class="muted">No plans here yet. Agents submit them with <code>POST /v1/plans</code>.</p>;
  return (
    <>
      <h2>Waiting for a decision ({pending.length})</h2>
      {pending.length === 0 ? <p class="muted">Nothing is waiting.</p> : <Rows plans={pending} session={props.session} />}
      <h2>Recent</h2>
      {rest.length === 0 ? <p class="muted">None yet.</p> : <Rows plans={rest} session={props.session} />}
    </>
  );
}

function Rows(props: { plans: PlanForReader[]; session: WebSession | undefined }) {
  return (
    <table class="plans">
      <thead><tr><th>Plan</th><th>Status</th><th>Agent</th><th>Targets</th><th>Expires</th><th>Hash</th></tr></thead>
      <tbody>
        {props.plans.map((p) => (
          <tr>
            <td>
              <a href={`/plans/${p.id}`}>{p.plan.title}</a>
              {props.session && p.whyNotDecide === undefined ? <> <span class="mine">· yours to decide</span></> : null}
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
