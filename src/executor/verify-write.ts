import type { AdapterApplyResult, Verification } from "../adapters/adapter.ts";
import type { ActionOutcome } from "../plan/outcome.ts";
import type { ActionPreview } from "../contract/agent-api.ts";

type Where = Pick<ActionOutcome, "index" | "target" | "path">;

/** The before/after reviewers were shown for one action. */
export type Seen = Pick<ActionPreview, "before" | "after">;

/**
 * What one write did, settled by the adapter's `verify` (a re-read with the read credential)
 * after it. The target's answer alone is not the record: a target may answer 200 and drop a
 * field, time out after writing, or answer with a page that is not its own. So:
 * - applied, and the re-read holds the previewed after-state (over the changed fields) →
 *   `verified: true`; it differs → `verified: false` with `driftAfterApply`, still applied
 *   (it was written; people must see how it landed); the re-read fails → `verified: null`.
 *   An apply that found the change already there (`reconciled`) says so.
 * - uncertain (no answer, a broken-off or non-JSON 2xx) → applied and verified when the re-read
 *   holds the change, else failed, with what the re-read saw.
 * Any other answer (stale, failed) is the target's word and is returned as it is.
 */
export async function settleWrite(
  where: Where,
  result: Exclude<AdapterApplyResult, { status: "expired" }>,
  verify: () => Promise<Verification>,
): Promise<ActionOutcome> {
  if (result.status === "stale" || result.status === "failed") return { ...where, status: result.status, detail: result.detail };
  // An apply that found the change already there (a retry after a crash) wrote nothing and says so.
  const applied = {
    ...where,
    status: "applied" as const,
    ...(result.status === "applied" && result.reconciled ? { reconciled: true, ...(result.detail ? { detail: result.detail } : {}) } : {}),
  };
  let verification: Verification;
  try {
    verification = await verify();
  } catch (err) {
    const why = `could not re-read after the write: ${(err as Error).message}`;
    if (result.status === "applied") return { ...applied, verified: null, detail: applied.detail ? `${applied.detail}; ${why}` : why };
    return { ...where, status: "failed", verified: null, detail: `${result.detail}; ${why}` };
  }
  if (result.status === "applied") {
    return verification.verified ? { ...applied, verified: true } : { ...applied, verified: false, driftAfterApply: verification.mismatches };
  }
  if (verification.verified) return { ...applied, verified: true, detail: `${result.detail}; re-read after it: the target holds the change` };
  return {
    ...where,
    status: "failed",
    verified: false,
    driftAfterApply: verification.mismatches,
    detail: `${result.detail}; re-read after it: the target does not hold the change`,
  };
}
