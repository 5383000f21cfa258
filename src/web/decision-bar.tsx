/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { ActionPreview } from "../contract/agent-api.ts";
import { MAX_STATED_REASON_CHARS } from "../service/access/index.ts";

const REJECT_FORM = "reject-form";

/** "2 changes", "40 changes in 3 actions": what Approve applies, said next to it. */
export function changeCount(actions: readonly Pick<ActionPreview, "changes">[]): string {
  const changes = actions.reduce((n, a) => n + a.changes.length, 0);
  const text = `${changes} ${changes === 1 ? "change" : "changes"}`;
  return actions.length > 1 ? `${text} in ${actions.length} actions` : text;
}

/**
 * The reason a rejection needs, where the decisions are listed. Its form is sent by the bar's
 * Reject; an empty reason stops the browser there and brings the field into view.
 */
export function RejectReason(props: { planId: string; hash: string; csrf: string }) {
  return (
    <form id={REJECT_FORM} method="post" action={`/plans/${props.planId}/reject`} class="inline reject-reason">
      <input type="hidden" name="hash" value={props.hash} />
      <input type="hidden" name="_csrf" value={props.csrf} />
      <label for="reason" class="muted">
        Reason
      </label>
      <textarea id="reason" name="reason" required maxlength={MAX_STATED_REASON_CHARS} placeholder="Why reject? The agent sees this."></textarea>
    </form>
  );
}

/**
 * Approve and Reject, held at the bottom of the window with the number of changes they decide,
 * so the decision is within reach however long the diff above it is. Only for a person who may
 * decide; it comes last in the page, so the keyboard reaches it after the diff.
 */
export function DecisionBar(props: { planId: string; hash: string; csrf: string; actions: readonly Pick<ActionPreview, "changes">[] }) {
  return (
    <section class="decision-bar" aria-label="Decision">
      <div class="decision-bar-inner">
        <a href="#changes" class="change-count">
          {changeCount(props.actions)}
        </a>
        <form method="post" action={`/plans/${props.planId}/approve`} class="inline">
          <input type="hidden" name="hash" value={props.hash} />
          <input type="hidden" name="_csrf" value={props.csrf} />
          <button type="submit" class="approve">
            Approve
          </button>
        </form>
        <button type="submit" form={REJECT_FORM} class="reject">
          Reject
        </button>
      </div>
    </section>
  );
}
