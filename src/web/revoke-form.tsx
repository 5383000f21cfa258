/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { MAX_STATED_REASON_CHARS } from "../service/access/index.ts";
import type { Revocation } from "../contract/agent-api.ts";
import type { PeopleNames } from "../service/people/index.ts";
import { Person } from "./person.tsx";

/** Withdraw an approval before an executor takes the plan: a reason is required, the agent reads it. */
export function RevokeForm(props: { planId: string; csrf: string }) {
  return (
    <form method="post" action={`/plans/${props.planId}/revoke`} class="inline revoke">
      <input type="hidden" name="_csrf" value={props.csrf} />
      <label for="revoke-reason" class="muted">
        Revoke the approval before an executor takes it
      </label>
      <textarea
        id="revoke-reason"
        name="reason"
        required
        maxlength={MAX_STATED_REASON_CHARS}
        placeholder="Why revoke? The agent and the approvers see this."
      ></textarea>
      <button type="submit" class="reject">
        Revoke
      </button>
    </form>
  );
}

/** Who revoked the plan and why. */
export function RevocationLine(props: { revocation: Revocation; names?: PeopleNames | undefined }) {
  const r = props.revocation;
  return (
    <p>
      Revoked by <Person id={r.userId} names={props.names} />
      {r.for ? (
        <>
          {" "}
          for <Person id={r.for} names={props.names} />
        </>
      ) : null}{" "}
      via {r.via}: {r.reason}
    </p>
  );
}
