/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { shortHash } from "../plan/fingerprint.ts";
import type { PlanView } from "../contract/agent-api.ts";

/** Applied (or failed part-way) and not taken back yet: an undo may be asked for. */
export function isUndoable(plan: Pick<PlanView, "status" | "outcome" | "undoneBy">): boolean {
  return plan.undoneBy === undefined && (plan.status === "applied" || (plan.status === "failed" && plan.outcome?.partial === true));
}

/**
 * Propose undo: a new plan that restores what this one changed goes to review. The service says
 * who may ask (those who may decide plans on its targets, and admins) and refuses anyone else.
 */
export function UndoForm(props: { plan: Pick<PlanView, "id" | "hash" | "status" | "outcome" | "undoneBy">; csrf: string }) {
  if (!isUndoable(props.plan)) return null;
  return (
    <form method="post" action={`/plans/${props.plan.id}/undo`} class="inline undo" data-undo-form>
      <input type="hidden" name="_csrf" value={props.csrf} />
      <span class="muted">
        Take this change back: a new plan that restores what plan {shortHash(props.plan.hash)} changed goes to review, and someone else approves it.
      </span>{" "}
      <button type="submit">Propose undo</button>
    </form>
  );
}

/** Which plan an undo takes back, who asked, and which undo took this plan back: links both ways. */
export function UndoLinks(props: { plan: Pick<PlanView, "undoes" | "undoneBy" | "plan"> }) {
  const { undoes, undoneBy } = props.plan;
  const askedBy = props.plan.plan.askedBy;
  return (
    <>
      {undoes ? (
        <div class="notice" role="status" data-version-link="undoes">
          ↩️ This plan undoes <a href={`/plans/${undoes.id}`}>plan {shortHash(undoes.hash)}</a>
          {askedBy ? (
            <>
              , asked for by <code>{askedBy.userId}</code> via {askedBy.via}, who may not approve it
            </>
          ) : null}
          .
        </div>
      ) : null}
      {undoneBy ? (
        <div class="notice" role="status" data-version-link="undone-by">
          ↩️ Taken back by <a href={`/plans/${undoneBy.id}`}>plan {shortHash(undoneBy.hash)}</a>: the target holds what it held before this plan.
        </div>
      ) : null}
    </>
  );
}
