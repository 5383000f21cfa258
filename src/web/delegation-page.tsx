/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { DelegationView } from "../service/delegation/index.ts";
import type { PeopleNames } from "../service/people/index.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import type { Notice } from "./notices.ts";
import { Layout } from "./layout.tsx";
import { Person } from "./person.tsx";

/** Where a person delegates their approvals while away, and sees what they gave and hold. */
export const DELEGATIONS_PATH = "/delegations";

const day = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/**
 * The delegation page: the form (who decides in your place, the last day, optionally some
 * targets), and the delegations in force the reader gave or holds, each with a button to end it.
 * What was typed comes back into the form after a refusal, so nothing has to be typed twice.
 */
export function DelegationsPage(props: {
  session: WebSession;
  delegations: readonly DelegationView[];
  targets: readonly string[];
  names?: PeopleNames | undefined;
  notice?: Notice | undefined;
  typed?: Record<string, string> | undefined;
}) {
  const { session, delegations, typed } = props;
  const given = delegations.filter((d) => d.delegator === session.userId);
  const held = delegations.filter((d) => d.delegate === session.userId);
  return (
    <Layout title="Delegate while away" session={session}>
      <p>
        <a href="/plans">← All plans</a>
      </p>
      <h1>Delegate while away</h1>
      {props.notice ? (
        <p class={`notice ${props.notice.kind}`} role={props.notice.kind === "bad" ? "alert" : "status"}>
          {props.notice.text}
        </p>
      ) : null}
      <section class="card" aria-labelledby="delegate-form">
        <h2 id="delegate-form">Someone decides in your place</h2>
        <p class="muted">
          Until the end of the day you give (in your Slack time zone), they may approve, reject, revoke and edit wherever you may, and your reminders go to
          them. Their decisions read "them for you". At most 90 days ahead; a target whose policy says <code>delegation: false</code> is left to its approvers.
        </p>
        <form method="post" action={DELEGATIONS_PATH} class="stack">
          <input type="hidden" name="_csrf" value={session.csrfToken} />
          <label>
            Their Slack user id <input name="delegate" required pattern="[UW][A-Z0-9]{2,}" placeholder="U024BE7LH" value={typed?.delegate ?? ""} />
          </label>
          <label>
            Last day <input type="date" name="until" required value={typed?.until ?? ""} />
          </label>
          <label>
            Only these targets (names separated by spaces; empty for every target){" "}
            <input name="targets" list="delegation-targets" value={typed?.targets ?? ""} />
          </label>
          <datalist id="delegation-targets">
            {props.targets.map((t) => (
              <option value={t} />
            ))}
          </datalist>
          <button type="submit">Delegate</button>
        </form>
      </section>
      <section class="card" aria-labelledby="delegations-given">
        <h2 id="delegations-given">Deciding for you</h2>
        <DelegationList delegations={given} other={(d) => d.delegate} csrf={session.csrfToken} names={props.names} empty="Nobody: you decide yourself." />
      </section>
      <section class="card" aria-labelledby="delegations-held">
        <h2 id="delegations-held">You decide for</h2>
        <DelegationList delegations={held} other={(d) => d.delegator} csrf={session.csrfToken} names={props.names} empty="Nobody has delegated to you." />
      </section>
    </Layout>
  );
}

function DelegationList(props: {
  delegations: readonly DelegationView[];
  other: (d: DelegationView) => string;
  csrf: string;
  names: PeopleNames | undefined;
  empty: string;
}) {
  if (props.delegations.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <ul class="delegations">
      {props.delegations.map((d) => (
        <li data-delegation={d.id}>
          <Person id={props.other(d)} names={props.names} /> until <span class="nowrap">{day(d.until)}</span>
          {d.targets ? <span class="muted"> · on {d.targets.join(", ")}</span> : <span class="muted"> · on every target</span>}{" "}
          <form method="post" action={`${DELEGATIONS_PATH}/${d.id}/end`} class="inline">
            <input type="hidden" name="_csrf" value={props.csrf} />
            <button type="submit">End now</button>
          </form>
        </li>
      ))}
    </ul>
  );
}
