import { randomUUID } from "node:crypto";
import { errors, jwtVerify, SignJWT, type JWTPayload } from "jose";
import { z } from "zod";
import { SHA256_PATTERN } from "../plan/fingerprint.ts";
import { GRANT_ALG, type SigningKey, type VerifyingKeys } from "./keys.ts";

export const grantAudience = (environment: string) => `countersign-executor:${environment}`;

export const GrantApprover = z.strictObject({ user: z.string(), via: z.enum(["slack", "web"]), at: z.iso.datetime() });
export type GrantApprover = z.infer<typeof GrantApprover>;

/** The claims of a grant: which plan, which exact hash, who approved it, for which executor, until when. */
export const GrantClaims = z.object({
  sub: z.uuid(),
  planHash: z.string().regex(SHA256_PATTERN),
  approvers: z.array(GrantApprover).min(1),
  aud: z.string(),
  iat: z.int(),
  exp: z.int(),
  jti: z.string().min(1),
});
export type GrantClaims = z.infer<typeof GrantClaims>;

export interface GrantInput {
  planId: string;
  planHash: string;
  approvers: GrantApprover[];
  environment: string;
  issuedAt: Date;
  expiresAt: Date;
}

/** Signs a grant: a compact JWS (EdDSA/Ed25519) with `kid` in its header. */
export async function issueGrant(key: SigningKey, input: GrantInput): Promise<{ token: string; jti: string }> {
  const jti = randomUUID();
  const token = await new SignJWT({ planHash: input.planHash, approvers: input.approvers })
    .setProtectedHeader({ alg: GRANT_ALG, kid: key.kid, typ: "countersign-grant+jwt" })
    .setSubject(input.planId)
    .setAudience(grantAudience(input.environment))
    .setIssuedAt(Math.floor(input.issuedAt.getTime() / 1000))
    .setExpirationTime(Math.floor(input.expiresAt.getTime() / 1000))
    .setJti(jti)
    .sign(key.key);
  return { token, jti };
}

export type GrantCheck =
  | { ok: true; claims: GrantClaims; expired: boolean }
  | { ok: false; reason: string };

/**
 * Verifies a grant with the executor's own keys only: the algorithm is pinned (the token's
 * `alg` is never trusted), the key is chosen by `kid` among configured keys, and the audience
 * must name this environment. An expired but otherwise valid grant is reported as such: the
 * executor may then only reconcile, never write.
 */
export async function verifyGrant(keys: VerifyingKeys, token: string, environment: string, now: Date): Promise<GrantCheck> {
  const options = { algorithms: [GRANT_ALG], audience: grantAudience(environment), typ: "countersign-grant+jwt", requiredClaims: ["sub", "exp", "iat", "jti"] };
  const getKey = (header: { kid?: string | undefined }) => {
    const key = header.kid ? keys.byKid.get(header.kid) : undefined;
    if (!key) throw new Error(`grant signed with unknown key '${header.kid ?? "(no kid)"}'`);
    return key;
  };
  let payload: JWTPayload;
  let expired = false;
  try {
    ({ payload } = await jwtVerify(token, getKey, { ...options, currentDate: now }));
  } catch (err) {
    if (!(err instanceof errors.JWTExpired) || typeof err.payload.exp !== "number") return { ok: false, reason: describe(err) };
    // Signature checked; check every other claim as of just before it expired.
    try {
      ({ payload } = await jwtVerify(token, getKey, { ...options, currentDate: new Date((err.payload.exp - 1) * 1000) }));
      expired = true;
    } catch (again) {
      return { ok: false, reason: describe(again) };
    }
  }
  const claims = GrantClaims.safeParse(payload);
  if (!claims.success) return { ok: false, reason: `grant claims are malformed: ${claims.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}` };
  return { ok: true, claims: claims.data, expired };
}

function describe(err: unknown): string {
  if (err instanceof errors.JOSEError) return `grant rejected (${err.code}): ${err.message}`;
  return `grant rejected: ${err instanceof Error ? err.message : String(err)}`;
}
