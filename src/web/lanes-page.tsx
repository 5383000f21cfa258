/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { LaneHealth } from "../service/delivery/index.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import type { DeadDelivery, OutboxVisibility } from "../service/delivery/index.ts";
import { Layout } from "./layout.tsx";

/** Where the page lives, and where a dead delivery's retry is posted. */
export const LANES_PATH = "/lanes";
export const retryPath = (id: number) => `${LANES_PATH}/dead/${id}/retry`;

/**
 * The outbox as an operator sees it: each lane's backlog, how long its oldest event has waited,
 * what holds it, and the dead deliveries (with a retry button for admins). Read on each load; the
 * numbers come from laneHealth, the same the metrics export.
 */
export function LanesPage(props: { seen: OutboxVisibility; session: WebSession }) {
  const { lanes, dead, mayRetry } = props.seen;
  const deadTotal = lanes.reduce((sum, l) => sum + l.dead, 0);
  return (
    <Layout title="Delivery lanes" session={props.session} seesLanes>
      <h1>Delivery lanes</h1>
      <p class="muted">
        Each lane delivers on its own, in order: a Slack review channel (<code>slack:&lt;channel&gt;</code>), an agent's webhooks (
        <code>webhook:&lt;agent&gt;</code>), the App Home. Ages count from the event a row carries.
      </p>
      <section class="card">
        <h2>Lanes</h2>
        {lanes.length === 0 ? <p class="muted">Nothing has been queued yet.</p> : <LanesTable lanes={lanes} />}
      </section>
      <section class="card">
        <h2>
          Dead deliveries ({deadTotal}
          {deadTotal > dead.length ? `, newest ${dead.length} shown` : ""})
        </h2>
        {mayRetry ? null : (
          <p class="muted">
            Only admins (the config's <code>admins</code>) may retry a dead delivery.
          </p>
        )}
        {dead.length === 0 ? (
          <p class="muted">None: every delivery arrived or is still being tried.</p>
        ) : (
          <DeadTable dead={dead} mayRetry={mayRetry} csrf={props.session.csrfToken} />
        )}
      </section>
    </Layout>
  );
}

function LanesTable(props: { lanes: LaneHealth[] }) {
  return (
    <table class="stacks lanes">
      <thead>
        <tr>
          <th>Lane</th>
          <th>Backlog</th>
          <th>Oldest waiting</th>
          <th>Dead</th>
          <th>State</th>
        </tr>
      </thead>
      <tbody>
        {props.lanes.map((l) => (
          <tr data-lane={l.lane}>
            <td data-label="Lane">
              <code>{l.lane || "(before lanes)"}</code>
            </td>
            <td data-label="Backlog" class="backlog">
              {l.backlog}
            </td>
            <td data-label="Oldest waiting">{l.backlog === 0 ? <span class="muted">—</span> : ageText(l.oldestUndeliveredSeconds)}</td>
            <td data-label="Dead" class="dead">
              {l.dead}
            </td>
            <td data-label="State" class="state">
              {stateText(l)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function DeadTable(props: { dead: DeadDelivery[]; mayRetry: boolean; csrf: string }) {
  return (
    <table class="stacks dead-deliveries">
      <thead>
        <tr>
          <th>Plan</th>
          <th>Lane</th>
          <th>Event</th>
          <th>Attempts</th>
          <th>Last error</th>
          <th>Died</th>
          {props.mayRetry ? <th></th> : null}
        </tr>
      </thead>
      <tbody>
        {props.dead.map((d) => (
          <tr data-outbox-id={String(d.id)}>
            <td data-label="Plan">{d.plan ? <a href={`/plans/${d.plan.id}`}>{d.plan.title ?? d.plan.id}</a> : <span class="muted">none</span>}</td>
            <td data-label="Lane">
              <code>{d.lane}</code> <span class="muted">({d.kind})</span>
            </td>
            <td data-label="Event">{d.event ?? "—"}</td>
            <td data-label="Attempts">{d.attempts}</td>
            <td data-label="Last error">{d.lastError ?? <span class="muted">unknown</span>}</td>
            <td data-label="Died">
              <time datetime={d.deadAt.toISOString()}>{timeText(d.deadAt)}</time>
            </td>
            {props.mayRetry ? (
              <td>
                <form method="post" action={retryPath(d.id)} class="inline">
                  <input type="hidden" name="_csrf" value={props.csrf} />
                  <button type="submit" aria-label={`Retry delivery ${d.id}`}>
                    Retry
                  </button>
                </form>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What holds a lane now, in words: a worker draining it, a Slack Retry-After, or nothing. */
function stateText(l: LaneHealth): string {
  if (l.heldUntil) return `held back until ${timeText(l.heldUntil)} (Slack asked to wait: 429 Retry-After)`;
  if (l.drainedBy) return `being delivered (worker ${l.drainedBy.token.slice(0, 8)}, lease until ${timeText(l.drainedBy.until)})`;
  return l.backlog > 0 ? "waiting for a worker" : "idle";
}

/** "45 s", "3 min 5 s", "2 h 10 min": how long a person reads at a glance. */
export function ageText(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86_400)} d ${Math.floor((seconds % 86_400) / 3600)} h`;
}

const timeText = (at: Date) => at.toISOString().replace("T", " ").slice(0, 19) + " UTC";
