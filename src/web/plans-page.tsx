/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { shortHash } from "../plan/fingerprint.ts";
import { PLAN_STATUSES } from "../plan/status.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import { pendingCursorText, type BrowserList, type PlanForReader } from "../service/review/index.ts";
import { Layout, StatusBadge } from "./layout.tsx";
import { AlikeOffers } from "./batch-page.tsx";

/** Which list a page shows: its status filter and where its page of pending plans starts (both as in the URL). */
export interface PlansListPage {
  filter: string | undefined;
  pendingAfter: string | undefined;
}

/** The list's own URL with these query parameters (undefined ones left out). */
function listHref(params: Record<string, string | undefined>): string {
  const query = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(v!)}`)
    .join("&");
  return query ? `/plans?${query}` : "/plans";
}

/** `version` is where all plans stood when this list was read (PlanSignals.version); the live stream starts from it. */
export function PlansPage(props: { list: BrowserList; session: WebSession | undefined; page: PlansListPage; version: string; seesLanes?: boolean }) {
  const { filter, pendingAfter } = props.page;
  return (
    <Layout title="Plans" session={props.session} seesLanes={props.seesLanes}>
      <h1>Plans</h1>
      <nav class="filters" aria-label="Filter by status">
        <a href="/plans" class={filter ? "" : "on"}>
          All
        </a>
        {PLAN_STATUSES.map((s) => (
          <a href={`/plans?status=${s}`} class={filter === s ? "on" : ""}>
            {s}
          </a>
        ))}
      </nav>
      {props.session ? (
        <p class="muted">
          <a href="/delegations">Away? Let someone decide in your place</a>
        </p>
      ) : null}
      <div
        data-live={`/plans/live?v=${encodeURIComponent(props.version)}`}
        data-fragment={listHref({ status: filter, pending_after: pendingAfter, fragment: "1" })}
      >
        <PlansTable list={props.list} session={props.session} page={props.page} />
      </div>
    </Layout>
  );
}

/**
 * Pending plans first, soonest expiry first, however old (those you may decide marked), a page at
 * a time with a link to the next; then the most recent others, newest first.
 */
export function PlansTable(props: { list: BrowserList; session: WebSession | undefined; page: PlansListPage }) {
  const { pending, recent, nextPending } = props.list;
  if (pending.length === 0 && recent.length === 0 && !nextPending && !props.page.pendingAfter) {
    return (
      <p class="muted">
        No plans here yet. Agents submit them with <code>POST /v1/plans</code>.
      </p>
    );
  }
  return (
    <>
      <h2>
        Waiting for a decision{props.page.pendingAfter ? " (continued)" : ""} ({pending.length}
        {nextPending ? "+" : ""})
      </h2>
      {props.session ? <AlikeOffers offers={props.list.alike} /> : null}
      {pending.length === 0 ? (
        <p class="muted">Nothing {props.page.pendingAfter ? "more " : ""}is waiting.</p>
      ) : (
        <Rows plans={pending} session={props.session} />
      )}
      {props.page.pendingAfter ? (
        <p>
          <a href={listHref({ status: props.page.filter })}>First pending plans</a>
        </p>
      ) : null}
      {nextPending ? (
        <p>
          <a class="more" href={listHref({ status: props.page.filter, pending_after: pendingCursorText(nextPending) })}>
            More pending plans
          </a>
        </p>
      ) : null}
      <h2>Recent</h2>
      {recent.length === 0 ? <p class="muted">None yet.</p> : <Rows plans={recent} session={props.session} />}
    </>
  );
}

function Rows(props: { plans: PlanForReader[]; session: WebSession | undefined }) {
  return (
    <table class="plans">
      <thead>
        <tr>
          <th>Plan</th>
          <th>Status</th>
          <th>Agent</th>
          <th>Targets</th>
          <th>Expires</th>
          <th>Hash</th>
        </tr>
      </thead>
      <tbody>
        {props.plans.map((p) => (
          <tr>
            <td>
              <a href={`/plans/${p.id}`}>{p.plan.title}</a>
              {props.session && p.whyNotDecide === undefined ? (
                <>
                  {" "}
                  <span class="mine">· yours to decide</span>
                </>
              ) : null}
            </td>
            <td data-label="Status">
              <StatusBadge status={p.status} />
            </td>
            <td data-label="Agent">{p.plan.agent}</td>
            <TargetsCell targets={[...new Set(p.plan.actions.map((a) => a.target))]} />
            {p.status === "pending" ? (
              <td data-label="Time left">
                <span data-expires={p.expiresAt}>…</span>
              </td>
            ) : (
              <td class="no-expiry">
                <span class="muted">—</span>
              </td>
            )}
            <td class="hash" data-label="Hash">
              {shortHash(p.hash)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A row's targets, labelled for the phone, where each cell stands on a line of its own. */
function TargetsCell(props: { targets: string[] }) {
  return <td data-label={props.targets.length === 1 ? "Target" : "Targets"}>{props.targets.join(", ")}</td>;
}
