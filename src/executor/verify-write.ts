import type { ResourceState } from "../adapters/http-json.ts";
import type { ApplyResult } from "../adapters/http-json-apply.ts";
import type { ActionOutcome } from "../plan/outcome.ts";
import type { ActionPreview, PlannedAction } from "../plan/schema.ts";
import { afterApplyMismatches } from "../plan/holds-change.ts";

type Where = Pick<ActionOutcome, "index" | "target" | "path">;

/**
 * What one write did, settled by re-reading the target with the read credential after it.
 * The target's answer alone is not the record: a target may answer 200 and drop a field, time
 * out after writing, or answer with a page that is not its own. So:
 * - applied, and the re-read holds the previewed after-state (over the changed fields) →
 *   `verified: true`; it differs → `verified: false` with `driftAfterApply`, still applied
 *   (it was written; people must see how it landed); the re-read fails → `verified: null`.
 * - uncertain (no answer, a broken-off or non-JSON 2xx) → applied and verified when the re-read
 *   holds the change, else failed, with what the re-read saw.
 * Any other answer (stale, failed) is the target's word and is returned as it is.
 */
export async function settleWrite(
  where: Where,
  result: ApplyResult,
  preview: Pick<ActionPreview, "before" | "after">,
  read: (action: PlannedAction) => Promise<ResourceState>,
  action: PlannedAction,
): Promise<ActionOutcome> {
  if (result.status === "stale" || result.status === "failed") return { ...where, status: result.status, detail: result.detail };
  let current: ResourceState;
  try {
    current = await read(action);
  } catch (err) {
    const why = `could not re-read after the write: ${(err as Error).message}`;
    if (result.status === "applied") return { ...where, status: "applied", verified: null, detail: why };
    return { ...where, status: "failed", verified: null, detail: `${result.detail}; ${why}` };
  }
  const drift = afterApplyMismatches(preview.before, preview.after, current.exists ? current.body : undefined);
  if (result.status === "applied") {
    return drift.length === 0 ? { ...where, status: "applied", verified: true } : { ...where, status: "applied", verified: false, driftAfterApply: drift };
  }
  if (drift.length === 0) return { ...where, status: "applied", verified: true, detail: `${result.detail}; re-read after it: the target holds the change` };
  return { ...where, status: "failed", verified: false, driftAfterApply: drift, detail: `${result.detail}; re-read after it: the target does not hold the change` };
}
