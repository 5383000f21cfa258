import { z } from "zod";

export const ActionOutcome = z.strictObject({
  index: z.int().min(0),
  target: z.string(),
  path: z.string(),
  status: z.enum(["applied", "stale", "failed", "skipped"]),
  /** True when the target already held this change and nothing was written. */
  reconciled: z.boolean().optional(),
  detail: z.string().max(4000).optional(),
  /** For a stale action: the version the plan was approved against, and what the target has now. */
  expected: z.string().nullable().optional(),
  now: z.string().nullable().optional(),
  changedSincePreview: z
    .array(z.strictObject({ path: z.string(), from: z.json().optional(), to: z.json().optional() }))
    .max(200)
    .optional(),
  /**
   * Whether the target, re-read after the write, holds the previewed after-state over the
   * fields the plan changes: true, false (see `driftAfterApply`), or null when the re-read
   * failed (`detail` says so). Absent on actions that were not written.
   */
  verified: z
    .boolean()
    .nullable()
    .optional()
    .describe(
      "For a written action: whether the target, re-read after the write, holds the previewed after-state over the fields the plan changes. `false` lists the fields in `driftAfterApply` (the plan stays `applied`); `null` means the re-read failed (`detail` says why). Absent for actions not written",
    ),
  /** Where the re-read target differs from the preview: the previewed value and the target's (a missing one is absent). */
  driftAfterApply: z
    .array(z.strictObject({ path: z.string(), expected: z.json().optional(), actual: z.json().optional() }))
    .max(200)
    .optional()
    .describe(
      "Where the target, re-read after the write, differs from the preview: the field (JSON Pointer), the approved value and the target's; a missing one is absent. Masked as previews are",
    ),
});
export type ActionOutcome = z.infer<typeof ActionOutcome>;

/** What the executor reports for a plan; `GET /v1/plans/:id` shows it as `outcome`. */
export const Outcome = z.strictObject({
  status: z.enum(["applied", "stale", "failed", "expired"]),
  reconciled: z.boolean().optional(),
  /** Some actions were written and a later one was not: the target holds part of the plan. */
  partial: z.boolean().optional(),
  reason: z.string().max(4000).optional(),
  actions: z.array(ActionOutcome),
});
export type Outcome = z.infer<typeof Outcome>;
