import { randomUUID, sign, verify } from "node:crypto";
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

const GRANT_TYP = "countersign-grant+jwt";
/** The only protected header members a grant has; `crit`, `b64`, `jwk`, `x5u`… are refused. */
const HEADER_MEMBERS = new Set(["alg", "kid", "typ"]);
/** Seconds of clock skew allowed on exp and nbf: none, as with jose's default before. */
const CLOCK_TOLERANCE_SECONDS = 0;

const b64json = (value: unknown): string => Buffer.from(JSON.stringify(value), "utf8").toString("base64url");

/**
 * Signs a grant: a compact JWS (EdDSA/Ed25519) with `kid` in its header, byte for byte what
 * jose's SignJWT made (same header, same claim order; Ed25519 is deterministic). Synchronous
 * node:crypto: no await, no thread-pool hop inside decide's row-locked transaction.
 */
export function issueGrant(key: SigningKey, input: GrantInput): { token: string; jti: string } {
  const jti = randomUUID();
  const header = b64json({ alg: GRANT_ALG, kid: key.kid, typ: GRANT_TYP });
  const payload = b64json({
    planHash: input.planHash,
    approvers: input.approvers,
    sub: input.planId,
    aud: grantAudience(input.environment),
    iat: Math.floor(input.issuedAt.getTime() / 1000),
    exp: Math.floor(input.expiresAt.getTime() / 1000),
    jti,
  });
  const signature = sign(null, Buffer.from(`${header}.${payload}`, "ascii"), key.key).toString("base64url");
  return { token: `${header}.${payload}.${signature}`, jti };
}

export type GrantCheck = { ok: true; claims: GrantClaims; expired: boolean } | { ok: false; reason: string };

class Refused extends Error {}
function refuse(reason: string): never {
  throw new Refused(reason);
}

/** Strict base64url: the URL-safe alphabet, no padding, and canonical (re-encodes to itself). */
function base64url(segment: string, what: string): Buffer {
  const bytes = Buffer.from(segment, "base64url");
  if (!/^[A-Za-z0-9_-]*$/.test(segment) || bytes.toString("base64url") !== segment) refuse(`${what} is not strict base64url`);
  return bytes;
}

/** A JSON object (not an array, null or a scalar) from a base64url segment. */
function jsonObject(segment: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(base64url(segment, what).toString("utf8"));
  } catch (err) {
    if (err instanceof Refused) throw err;
    refuse(`${what} is not JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) refuse(`${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

function numericDate(payload: Record<string, unknown>, claim: "iat" | "exp" | "nbf"): number | undefined {
  const value = payload[claim];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) refuse(`"${claim}" claim must be a whole number of seconds`);
  return value;
}

/**
 * Verifies a grant with the executor's own keys only, synchronously (node:crypto), as strictly
 * as jose's jwtVerify did: three strict base64url segments; a header of exactly alg, kid and typ
 * (`crit` or any other member refused), the algorithm pinned to EdDSA (the token's `alg` is never
 * trusted), the key chosen by `kid` among configured keys, typ exact; then the signature; then a
 * JSON object payload with sub, iat, exp and jti, iat and exp whole seconds, and an audience that
 * is exactly this environment's. An expired but otherwise valid grant is reported as such (only
 * once everything else passed): the executor may then only reconcile, never write.
 */
export function verifyGrant(keys: VerifyingKeys, token: string, environment: string, now: Date): GrantCheck {
  let payload: Record<string, unknown>;
  let expired: boolean;
  try {
    ({ payload, expired } = check(keys, token, grantAudience(environment), Math.floor(now.getTime() / 1000)));
  } catch (err) {
    if (err instanceof Refused) return { ok: false, reason: `grant rejected: ${err.message}` };
    throw err;
  }
  const claims = GrantClaims.safeParse(payload);
  if (!claims.success)
    return { ok: false, reason: `grant claims are malformed: ${claims.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}` };
  return { ok: true, claims: claims.data, expired };
}

function check(keys: VerifyingKeys, token: string, audience: string, nowSeconds: number): { payload: Record<string, unknown>; expired: boolean } {
  if (typeof token !== "string") refuse("not a compact JWS");
  const parts = token.split(".");
  if (parts.length !== 3) refuse("not a compact JWS (three dot-separated segments)");
  const [headerSegment, payloadSegment, signatureSegment] = parts as [string, string, string];

  const header = jsonObject(headerSegment, "the protected header");
  if (header.alg !== GRANT_ALG) refuse(`alg must be ${GRANT_ALG}, not ${JSON.stringify(header.alg)}`);
  if ("crit" in header) refuse("the crit header member is not understood");
  const unknown = Object.keys(header).filter((member) => !HEADER_MEMBERS.has(member));
  if (unknown.length > 0) refuse(`unexpected header member(s) ${unknown.map((m) => JSON.stringify(m)).join(", ")}`);
  if (header.typ !== GRANT_TYP) refuse(`unexpected "typ" header value ${JSON.stringify(header.typ)}`);
  const kid = typeof header.kid === "string" ? header.kid : undefined;
  const key = kid === undefined ? undefined : keys.byKid.get(kid);
  if (!key) refuse(`grant signed with unknown key '${kid ?? "(no kid)"}'`);

  const signature = base64url(signatureSegment, "the signature");
  if (!verify(null, Buffer.from(`${headerSegment}.${payloadSegment}`, "ascii"), key, signature)) refuse("signature verification failed");

  const payload = jsonObject(payloadSegment, "the payload");
  for (const claim of ["sub", "exp", "iat", "jti"]) if (!Object.hasOwn(payload, claim)) refuse(`missing required "${claim}" claim`);
  if (payload.aud !== audience) refuse(`unexpected "aud" claim value ${JSON.stringify(payload.aud)}`);
  numericDate(payload, "iat");
  const exp = numericDate(payload, "exp")!; // present: checked above
  const expired = exp <= nowSeconds - CLOCK_TOLERANCE_SECONDS;
  // An expired grant's other claims are checked as of just before it expired, as before.
  const nbf = numericDate(payload, "nbf");
  if (nbf !== undefined && nbf > (expired ? exp - 1 : nowSeconds) + CLOCK_TOLERANCE_SECONDS) refuse('"nbf" claim timestamp check failed');
  return { payload, expired };
}
