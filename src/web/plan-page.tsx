/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { RevocationLine, RevokeForm } from "./revoke-form.tsx";
import { UndoForm, UndoLinks } from "./undo-form.tsx";
import { weakPrecondition } from "../plan/weak-precondition.ts";
import { shortHash } from "../plan/fingerprint.ts";
import type { ActionPreview, Hold } from "../contract/agent-api.ts";
import type { PlanDiff } from "../policy/plan-diff.ts";
import type { WebSession } from "../service/sign-in/index.ts";
import type { DecisionRefusal, ReviewedPlan } from "../service/review/index.ts";
import { ActionChanges, ChangeRows, show } from "./change-rows.tsx";
import { Layout, StatusBadge } from "./layout.tsx";
import { DriftAfterApply, driftHeading, VerifiedNote } from "./verification.tsx";
import type { Notice } from "./notices.ts";
import type { PeopleNames } from "../service/people/index.ts";
import { People, Person } from "./person.tsx";
import { DecisionBar, RejectReason } from "./decision-bar.tsx";
import { EditValuesForm, type EditPanel } from "./edit-form.tsx";

const when = (iso: string) => iso.replace("T", " ").replace(/\.\d+Z$/, " UTC");
const clockTime = (iso: string) => `${iso.slice(11, 16)} UTC`;

/**
 * `version` is where the plan stood when this page was read (PlanSignals.version); the live
 * stream starts from it. `notice` is a refusal, rendered only in the response to the refused POST.
 */
export function PlanPage(props: {
  reviewed: ReviewedPlan;
  session: WebSession | undefined;
  names?: PeopleNames | undefined;
  /** The edit form, for a person who may edit the plan now. */
  edit?: EditPanel | undefined;
  version: string;
  notice?: Notice | undefined;
}) {
  const { plan } = props.reviewed;
  return (
    <Layout title={plan.plan.title} session={props.session}>
      <p>
        <a href="/plans">← All plans</a>
      </p>
      {props.notice ? (
        <div class={`notice ${props.notice.kind}`} role="alert">
          {props.notice.text}
        </div>
      ) : null}
      <div data-live={`/plans/${plan.id}/live?v=${encodeURIComponent(props.version)}`} data-fragment={`/plans/${plan.id}?fragment=1`}>
        <PlanBody reviewed={props.reviewed} session={props.session} names={props.names} edit={props.edit} />
      </div>
    </Layout>
  );
}

/** The part of the plan page that live updates replace. `names`: people's display names (pageNames); absent, ids are shown. */
export function PlanBody(props: { reviewed: ReviewedPlan; session: WebSession | undefined; names?: PeopleNames | undefined; edit?: EditPanel | undefined }) {
  const { plan, events, deadDeliveries } = props.reviewed;
  const doc = plan.plan;
  // The service answered for this reader by the same rule decide() applies.
  const canDecide = props.session !== undefined && plan.whyNotDecide === undefined;
  return (
    <>
      <h1>{doc.title}</h1>
      <p>
        <StatusBadge status={plan.status} /> <span class="muted">plan</span>{" "}
        <span class="hash" title={plan.hash}>
          {shortHash(plan.hash)}
        </span>
        {plan.supersedes ? (
          <>
            {" "}
            · <span class="muted">replaces</span>{" "}
            <a href={`/plans/${plan.supersedes.id}`} data-version-link="supersedes">
              version {shortHash(plan.supersedes.hash)}
            </a>
          </>
        ) : null}
        {doc.editedBy ? (
          <>
            {" "}
            · <span class="muted">values edited by</span> <Person id={doc.editedBy.userId} names={props.names} />
          </>
        ) : null}
      </p>
      {plan.supersededBy ? (
        <div class="notice bad" role="status" data-version-link="superseded-by">
          {plan.supersededBy.editedBy ? (
            <>
              Superseded: <Person id={plan.supersededBy.editedBy.userId} names={props.names} /> edited its values, decide on the new version —{" "}
            </>
          ) : plan.status === "superseded" ? (
            "Superseded: the agent sent a newer version, decide on that one — "
          ) : (
            "The agent sent a newer version of this stale plan — "
          )}
          <a href={`/plans/${plan.supersededBy.id}`}>version {shortHash(plan.supersededBy.hash)}</a>
        </div>
      ) : null}
      <UndoLinks plan={plan} />
      {props.session ? <YourDecision plan={plan} userId={props.session.userId} /> : null}
      {(plan.status === "pending" || plan.status === "approved") && plan.watch?.failingSince ? (
        <div class="notice bad" role="status" data-watch="failing">
          Could not re-check the target since {clockTime(plan.watch.failingSince)}: it does not answer. The plan stays open; the executor re-checks before
          writing.
        </div>
      ) : null}
      {plan.status === "approved" && plan.held ? <HeldNotice held={plan.held} grantExpiresAt={plan.grantExpiresAt} /> : null}
      {plan.outcome ? (
        <section class="card" aria-labelledby="outcome">
          <h2 id="outcome">
            Outcome: <StatusBadge status={plan.outcome.status} />
            {plan.outcome.reconciled ? " (reconciled: the target already held the change)" : ""}
            {plan.outcome.partial ? " — partially applied" : ""}
            {driftHeading(plan.outcome)}
          </h2>
          {plan.outcome.reason ? <p>{plan.outcome.reason}</p> : null}
          <table class="outcome stacks">
            <colgroup>
              <col class="n" />
              <col />
              <col />
              <col class="result" />
              <col class="detail" />
            </colgroup>
            <thead>
              <tr>
                <th>#</th>
                <th>Target</th>
                <th>Path</th>
                <th>Result</th>
                <th>Detail</th>
              </tr>
            </thead>
            <tbody>
              {plan.outcome.actions.map((a) => (
                <tr>
                  <td class="n" data-label="#">
                    {a.index + 1}
                  </td>
                  <td data-label="Target">{a.target}</td>
                  <td data-label="Path">
                    <code>{a.path}</code>
                  </td>
                  <td data-label="Result">
                    {/* "applied · verified" is one phrase: it never wraps apart. */}
                    <span class={a.verified === true ? "nowrap" : undefined}>
                      <StatusBadge status={a.status} />
                      <VerifiedNote action={a} />
                    </span>
                  </td>
                  <td data-label="Detail">
                    {a.detail ?? ""}
                    {a.expected !== undefined ? ` (expected ${a.expected ?? "absent"}, now ${a.now ?? "absent"})` : ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <DriftAfterApply outcome={plan.outcome} />
          <ChangedSincePreview outcome={plan.outcome} />
        </section>
      ) : null}

      {/* The change comes before the decision: nobody should reach Approve without passing the diff. */}
      {props.reviewed.changedSince ? <ChangedSince diff={props.reviewed.changedSince} /> : null}
      <h2 id="changes">Changes</h2>
      {plan.preview.actions.map((action, i) => (
        <ActionDiff action={action} index={i} />
      ))}
      <section class="card">
        <dl class="meta">
          <dt>Agent</dt>
          <dd>{doc.agent}</dd>
          <dt>On behalf of</dt>
          <dd>{doc.onBehalfOf ? <Person id={doc.onBehalfOf} names={props.names} /> : <span class="muted">nobody named</span>}</dd>
          <dt>Reason</dt>
          <dd>{doc.reason ?? <span class="muted">none given</span>}</dd>
          <dt>Environment</dt>
          <dd>{doc.environment}</dd>
          {doc.policy.risk ? (
            <>
              <dt>Risk</dt>
              <dd>
                <span class={`badge risk-${doc.policy.risk.level}`}>{doc.policy.risk.level}</span> <span class="muted">({doc.policy.risk.rule})</span>
              </dd>
            </>
          ) : null}
          <dt>Submitted</dt>
          <dd>{when(plan.createdAt)}</dd>
          <dt>Expires</dt>
          <dd>
            {when(plan.expiresAt)}
            {plan.status === "pending" ? (
              <>
                {" "}
                · <strong data-expires={plan.expiresAt}>…</strong>
              </>
            ) : null}
          </dd>
          <dt>Hash</dt>
          <dd class="hash">{plan.hash}</dd>
        </dl>
      </section>

      <section class="card" aria-labelledby="decisions">
        <h2 id="decisions">Decisions</h2>
        <p>
          {plan.approvals.length} of {doc.policy.requiredApprovals} approval(s). May approve: <People ids={doc.policy.approvers} names={props.names} />
          {doc.policy.rule ? <span class="muted"> (rule {doc.policy.rule})</span> : null}
        </p>
        {plan.approvals.length > 0 ? (
          <ul>
            {plan.approvals.map((a) => (
              <li>
                Approved by <Person id={a.userId} names={props.names} />
                {a.for ? (
                  <>
                    {" "}
                    for <Person id={a.for} names={props.names} />
                  </>
                ) : null}{" "}
                via {a.via} at {when(a.at)}
                {a.recheckFailed ? (
                  <>
                    {" "}
                    <span class="badge risk-medium" data-recheck="failed" title={a.recheckFailed}>
                      could not re-check
                    </span>{" "}
                    <span class="muted">the target could not be read at this approval; the executor re-checks before writing</span>
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        ) : null}
        {plan.rejection ? (
          <p>
            Rejected by <Person id={plan.rejection.userId} names={props.names} />
            {plan.rejection.for ? (
              <>
                {" "}
                for <Person id={plan.rejection.for} names={props.names} />
              </>
            ) : null}{" "}
            via {plan.rejection.via}: {plan.rejection.reason}
          </p>
        ) : null}
        {plan.revocation ? <RevocationLine revocation={plan.revocation} names={props.names} /> : null}
        {props.reviewed.mayRevoke && props.session ? <RevokeForm planId={plan.id} csrf={props.session.csrfToken} /> : null}
        {props.session ? <UndoForm plan={plan} csrf={props.session.csrfToken} /> : null}
        {canDecide ? (
          <RejectReason planId={plan.id} hash={plan.hash} csrf={props.session!.csrfToken} />
        ) : (
          <WhyNoButtons why={plan.whyNotDecide} signedIn={props.session !== undefined} />
        )}
      </section>
      {props.edit && props.session ? <EditValuesForm panel={props.edit} csrf={props.session.csrfToken} /> : null}

      {deadDeliveries.length > 0 ? (
        <section class="card notice bad">
          <strong>Some notifications could not be delivered:</strong>
          <ul>
            {deadDeliveries.map((d) => (
              <li>
                {d.kind}: {d.error ?? "unknown error"} ({when(d.at)})
              </li>
            ))}
          </ul>
        </section>
      ) : null}

      <section class="card" aria-labelledby="timeline">
        <h2 id="timeline">Audit timeline</h2>
        <ol class="timeline">
          {events.map((e) => (
            <li>
              <time datetime={e.at}>{when(e.at)}</time>
              <strong>{e.type}</strong> <Actor actor={e.actor} names={props.names} />
            </li>
          ))}
        </ol>
      </section>
      {canDecide ? <DecisionBar planId={plan.id} hash={plan.hash} csrf={props.session!.csrfToken} actions={plan.preview.actions} /> : null}
    </>
  );
}

/** The signed-in person's own decision, from their decision row: the page's only "recorded" notice. */
function YourDecision(props: { plan: ReviewedPlan["plan"]; userId: string }) {
  const approval = props.plan.approvals.find((a) => a.userId === props.userId);
  const rejection = props.plan.rejection?.userId === props.userId ? props.plan.rejection : undefined;
  if (!approval && !rejection) return null;
  const text = approval ? `Your approval is recorded at ${clockTime(approval.at)}.` : `Your rejection is recorded at ${clockTime(rejection!.at)}.`;
  return (
    <div class="notice ok" role="status">
      {text}
    </div>
  );
}

/** "Changed since version <short hash>": what this re-plan does differently from the version it replaces. */
function ChangedSince(props: { diff: PlanDiff }) {
  const { diff } = props;
  const ref = (a: { op: string; target: string; path: string }) => (
    <>
      <span class="badge s-approved">{a.op}</span> <strong>{a.target}</strong> <code>{a.path}</code>
    </>
  );
  const nothing = diff.added.length === 0 && diff.removed.length === 0 && diff.changed.length === 0;
  return (
    <section class="card" aria-labelledby="changed-since">
      <h2 id="changed-since">
        Changed since <a href={`/plans/${diff.since.id}`}>version {shortHash(diff.since.hash)}</a>
      </h2>
      {nothing ? <p class="muted">Nothing a reviewer sees changed: the same writes again.</p> : null}
      <ul>
        {diff.added.map((a) => (
          <li>Added {ref(a)}</li>
        ))}
        {diff.removed.map((a) => (
          <li>Removed {ref(a)}</li>
        ))}
        {diff.changed.map((a) => (
          <li>
            Changed {ref(a)}
            {a.wasOp ? <span class="muted"> (was {a.wasOp})</span> : null}
            {a.changes.length > 0 ? <ChangeRows changes={a.changes} headings={[`Version ${shortHash(diff.since.hash)}`, "This version"]} /> : null}
          </li>
        ))}
      </ul>
      {diff.unchanged > 0 ? <p class="muted">{diff.unchanged} action(s) unchanged.</p> : null}
    </section>
  );
}

/**
 * What changed on the target since the preview, for a stale plan: "`/email` is now
 * "b@…", was "a@…" when you were asked", per stale action, from the reviewer's (masked) view.
 */
function ChangedSincePreview(props: { outcome: NonNullable<ReviewedPlan["plan"]["outcome"]> }) {
  const stale = props.outcome.actions.filter((a) => a.status === "stale" && (a.changedSincePreview?.length ?? 0) > 0);
  if (stale.length === 0) return null;
  return (
    <div data-changed-since-preview>
      {stale.map((a) => (
        <>
          <p>
            <strong>{a.target}</strong> <code>{a.path}</code> changed since you were asked:
          </p>
          <ul>
            {a.changedSincePreview!.map((c) => (
              <li>
                <code>{c.path || "/"}</code> is now <code>{show(c.to)}</code>, was <code>{show(c.from)}</code> when you were asked
              </li>
            ))}
          </ul>
        </>
      ))}
    </div>
  );
}

function ActionDiff(props: { action: ActionPreview; index: number }) {
  const { action } = props;
  return (
    <section class="card" aria-label={`Action ${props.index + 1}`}>
      <p>
        <span class="badge s-approved">{action.op}</span> <strong>{action.target}</strong> <code>{action.path}</code>
        <span class="muted"> · version read: {action.version ?? "(absent)"}</span>
        <WeakPreconditionBadge precondition={action.precondition} />
      </p>
      <ActionChanges changes={action.changes} />
      <details>
        <summary>Full before and after</summary>
        <p class="muted">Before</p>
        <pre>{show(action.before ?? undefined)}</pre>
        <p class="muted">After</p>
        <pre>{show(action.after ?? undefined)}</pre>
      </details>
    </section>
  );
}

/** Why nobody applies this approved plan now (the pause has its own banner on every page). */
function HeldNotice(props: { held: Hold; grantExpiresAt: string | undefined }) {
  const { held } = props;
  const lapses = props.grantExpiresAt ? (
    <>
      ; the approval lapses at <time datetime={props.grantExpiresAt}>{when(props.grantExpiresAt)}</time>
    </>
  ) : null;
  if (held.by === "no_executor")
    return (
      <div class="notice bad" data-held="no_executor">
        <strong>Waiting for an executor:</strong> none is connected
        {held.lastSeenAt ? (
          <>
            {" "}
            (the last one asked for work at <time datetime={held.lastSeenAt}>{when(held.lastSeenAt)}</time>)
          </>
        ) : (
          " (none has asked for work yet)"
        )}
        , so nobody applies this plan until one does{lapses}.
      </div>
    );
  if (held.by === "grant_key_mismatch")
    return (
      <div class="notice bad" data-held="grant_key_mismatch">
        <strong>Waiting for an executor with the server's key:</strong> the executors asking for work cannot verify this plan's grant (signed with key{" "}
        <code>{held.grantKid}</code>){lapses}.
      </div>
    );
  return null;
}

/** Why this reader has no buttons, in the page's words. */
function WhyNoButtons(props: { why: DecisionRefusal | undefined; signedIn: boolean }) {
  const { why } = props;
  if (!props.signedIn)
    return (
      <p class="muted">
        Sign in (<code>/countersign login</code> in Slack) to decide.
      </p>
    );
  switch (why?.code) {
    case "already_decided":
      return <p class="muted">This plan is {why.status}; there is nothing left to decide.</p>;
    case "plan_expired":
      return <p class="muted">This plan has expired; there is nothing left to decide.</p>;
    case "already_voted":
      return <p class="muted">You approved this plan; it waits for other approvers.</p>;
    case "self_approval":
      return <p class="muted">This plan was requested on your behalf, or you edited it or asked for it, so someone else must decide it.</p>;
    case "approver_check_failed":
      return <p class="muted">Countersign could not check your user group membership ({why.groups.join(", ")}) with Slack just now; reload to try again.</p>;
    default:
      return <p class="muted">You are not an approver for this plan.</p>;
  }
}

/** Who did what the audit timeline lists: a person by name and id, an agent or a process by name. */
function Actor(props: { actor: unknown; names: PeopleNames | undefined }) {
  const a = props.actor as { type?: string; userId?: string; via?: string; name?: string; process?: string; for?: string };
  if (a.type === "user" && a.userId)
    return (
      <span class="muted">
        by <Person id={a.userId} names={props.names} withId />
        {a.for ? (
          <>
            {" "}
            for <Person id={a.for} names={props.names} withId />
          </>
        ) : null}{" "}
        via {a.via}
      </span>
    );
  if (a.type === "agent") return <span class="muted">by agent {a.name}</span>;
  return a.process ? <span class="muted">by {a.process}</span> : null;
}

/** The badge for a precondition weaker than the target refusing a racing write (weak-precondition.ts). */
function WeakPreconditionBadge(props: { precondition: string | undefined }) {
  const weak = weakPrecondition(props.precondition);
  return weak ? (
    <span class="badge risk-medium" title={weak.why}>
      {" "}
      weaker precondition: {weak.label}
    </span>
  ) : null;
}
