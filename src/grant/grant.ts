import { randomUUID } from "node:crypto";
import { decodeProtectedHeader, errors, jwtVerify, SignJWT, type JWTHeaderParameters, type JWTPayload } from "jose";
import { z } from "zod";
import { SHA256_PATTERN } from "../plan/fingerprint.ts";
import { GRANT_ALG, type SigningKey, type VerifyingKeys } from "./keys.ts";

export const grantAudience = (environment: string) => `countersign-executor:${environment}`;

/** One approval the grant rests on; `for`: the person the approver acted for through a delegation, when not themselves. */
export const GrantApprover = z.strictObject({ user: z.string(), via: z.enum(["slack", "web"]), at: z.iso.datetime(), for: z.string().optional() });
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

const GRANT_TYP = "countersign-grant+jwt";
const HEADER_MEMBERS = new Set(["alg", "kid", "typ"]);
const SEGMENTS = ["the protected header", "the payload", "the signature"];

/** A grant's protected header, its members in the order they are serialized. */
const grantHeader = (kid: string) => ({ alg: GRANT_ALG, kid, typ: GRANT_TYP });

/**
 * The first segment of every grant `kid` signs: jose serializes the header with JSON.stringify,
 * so it is the same string each time, and the server finds the grants a key signed by it.
 */
export function grantHeaderSegment(kid: string): string {
  return Buffer.from(JSON.stringify(grantHeader(kid))).toString("base64url");
}

/** The `kid` a token's header names, unverified: which key it claims to be signed with, if any. */
export function unverifiedKidOf(token: string): string | undefined {
  try {
    const { kid } = decodeProtectedHeader(token);
    return typeof kid === "string" ? kid : undefined;
  } catch {
    return undefined;
  }
}

/** Signs a grant: a compact JWS (EdDSA/Ed25519) with `kid` and `typ` in its header. */
export async function issueGrant(key: SigningKey, input: GrantInput): Promise<{ token: string; jti: string }> {
  const jti = randomUUID();
  const token = await new SignJWT({ planHash: input.planHash, approvers: input.approvers })
    .setProtectedHeader(grantHeader(key.kid))
    .setSubject(input.planId)
    .setAudience(grantAudience(input.environment))
    .setIssuedAt(Math.floor(input.issuedAt.getTime() / 1000))
    .setExpirationTime(Math.floor(input.expiresAt.getTime() / 1000))
    .setJti(jti)
    .sign(key.key);
  return { token, jti };
}

export type GrantCheck = { ok: true; claims: GrantClaims; expired: boolean } | { ok: false; reason: string };

/**
 * Verifies a grant with the executor's own keys only: the algorithm is pinned (the token's `alg`
 * is never trusted), the key is chosen by `kid` among configured keys, and the audience must name
 * this environment. An expired but otherwise valid grant is reported as such: the executor may
 * then only reconcile, never write.
 */
export async function verifyGrant(keys: VerifyingKeys, token: string, environment: string, now: Date): Promise<GrantCheck> {
  const unlike = unlikeAnIssuedGrant(token);
  if (unlike) return { ok: false, reason: `grant rejected: ${unlike}` };
  const options = { algorithms: [GRANT_ALG], audience: grantAudience(environment), typ: GRANT_TYP, requiredClaims: ["sub", "exp", "iat", "jti"] };
  const keyFor = (header: JWTHeaderParameters) => {
    const key = typeof header.kid === "string" ? keys.byKid.get(header.kid) : undefined;
    if (!key) throw new errors.JWKSNoMatchingKey(`grant signed with unknown key ${typeof header.kid === "string" ? `\`${header.kid}\`` : "'(no kid)'"}`);
    return key;
  };
  let payload: JWTPayload;
  let expired = false;
  try {
    ({ payload } = await jwtVerify(token, keyFor, { ...options, currentDate: now }));
  } catch (err) {
    if (!(err instanceof errors.JWTExpired)) return refusal(err);
    // The signature holds; every other claim is checked as of the grant's last valid second.
    try {
      ({ payload } = await jwtVerify(token, keyFor, { ...options, currentDate: new Date((err.payload.exp! - 1) * 1000) }));
      expired = true;
    } catch (again) {
      return refusal(again);
    }
  }
  const claims = GrantClaims.safeParse(payload);
  if (!claims.success)
    return { ok: false, reason: `grant claims are malformed: ${claims.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}` };
  return { ok: true, claims: claims.data, expired };
}

/** jose's reason; a wrong audience also names the one the grant carries (signed, so it is what the server meant). */
function refusal(err: unknown): { ok: false; reason: string } {
  if (!(err instanceof errors.JOSEError)) throw err;
  const aud = err instanceof errors.JWTClaimValidationFailed && err.claim === "aud" ? ` ${JSON.stringify(err.payload.aud)}` : "";
  return { ok: false, reason: `grant rejected: ${err.message}${aud}` };
}

/**
 * What jwtVerify accepts but issueGrant never writes, or undefined. Tokens jose refuses anyway
 * (wrong segment count, a header that is not a JSON object) are left to jose and its reasons.
 */
function unlikeAnIssuedGrant(token: string): string | undefined {
  const segments = token.split(".");
  if (segments.length !== 3) return undefined;
  // One spelling per grant: jose's decoder also takes padding, whitespace and non-zero spare
  // bits, so one signed grant could travel as many different strings.
  for (const [i, segment] of segments.entries())
    if (!/^[A-Za-z0-9_-]*$/.test(segment) || Buffer.from(segment, "base64url").toString("base64url") !== segment)
      return `${SEGMENTS[i]} is not strict base64url`;
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return undefined;
  }
  // jose skips header members it does not know: a `jwk` (a key the token brings for itself) or a
  // `__proto__` would pass. A grant carries alg, kid and typ, nothing else.
  const unexpected = Object.keys(header).filter((member) => !HEADER_MEMBERS.has(member));
  if (unexpected.length > 0) return `unexpected header member(s) ${unexpected.map((m) => JSON.stringify(m)).join(", ")}`;
  // jose compares typ ignoring case and an `application/` prefix; a grant's typ has one spelling.
  if (header.typ !== GRANT_TYP) return `unexpected "typ" header value ${JSON.stringify(header.typ)}`;
  return undefined;
}
