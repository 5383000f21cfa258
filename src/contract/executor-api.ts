import { z } from "zod";
import { SHA256_PATTERN } from "../plan/fingerprint.ts";
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

/** A grant key's id: the RFC 7638 SHA-256 thumbprint of its public key, in base64url. */
export const KeyId = z.string().regex(/^[A-Za-z0-9_-]{43}$/, "a key id is the 43-character base64url RFC 7638 thumbprint of an Ed25519 public key");

/** A key the server signs grants with: its id, and the SHA-256 of its SPKI DER for a person to compare. */
export const GrantKey = z.strictObject({ kid: KeyId, fingerprint: z.string().regex(SHA256_PATTERN) });
export type GrantKey = z.output<typeof GrantKey>;

/** `GET /v1/executor/keys`: the keys the server signs grants with, so an executor can check its own before claiming. */
export const GrantKeys = z.strictObject({ keys: z.array(GrantKey).min(1) });
export type GrantKeys = z.output<typeof GrantKeys>;

/**
 * `POST /v1/executor/claim?kid=…&kid=…`: the key ids whose grants the executor can verify (every
 * key in its COUNTERSIGN_GRANT_PUBLIC_KEY). Only a plan whose grant one of them signed is handed
 * to it; the rest stay approved for an executor that can verify them. A claim naming none is
 * handed any plan.
 */
export const CLAIM_KID_PARAM = "kid";
export const MAX_CLAIM_KIDS = 16;
export const ClaimKids = z.array(KeyId).max(MAX_CLAIM_KIDS);

/** The longest a claim's long-poll waits for work (`POST /v1/executor/claim?wait=`, and its default). */
export const MAX_CLAIM_WAIT_SECONDS = 25;

/**
 * Names the executor process on every claim, heartbeat and report: a random id it makes at start,
 * so the server can count the executors connected (`countersign_executors_connected`) and tell
 * when none is. A request without it counts as one unnamed executor.
 */
export const EXECUTOR_ID_HEADER = "countersign-executor-id";
export const ExecutorId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1 to 64 letters, digits, '-' or '_'");
