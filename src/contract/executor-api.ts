import { z } from "zod";
import { Outcome } from "../plan/outcome.ts";
import { PlanDocument } from "../plan/schema.ts";
import { ActionPreview } from "./agent-api.ts";

/**
 * The executor API's bodies, parsed on both sides of the wire: the server builds them as these
 * types and the executor parses what arrives with these schemas, so a claim that does not match
 * is refused by name instead of cast.
 */

/** One approved plan handed to one executor: the plan, its preview, the signed grant and the lease. */
export const Claim = z.strictObject({
  plan: PlanDocument,
  preview: z.strictObject({ actions: z.array(ActionPreview) }),
  grant: z.string().min(1),
  claimToken: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  leaseExpiresAt: z.iso.datetime(),
});
export type Claim = z.output<typeof Claim>;

/** The answer to a heartbeat: the lease, extended. */
export const Heartbeat = z.strictObject({ leaseExpiresAt: z.iso.datetime() });
export type Heartbeat = z.output<typeof Heartbeat>;

/** What an executor reports once it has applied (or refused) a plan. */
export const Report = Outcome;
export type Report = z.output<typeof Report>;
