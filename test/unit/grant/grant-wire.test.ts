import { createHmac, randomUUID, sign, type KeyObject } from "node:crypto";
import { decodeJwt, importSPKI, jwtVerify, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { GrantClaims, grantAudience, issueGrant, verifyGrant, type GrantInput } from "../../../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, loadVerifyingKeys, type SigningKey, type VerifyingKeys } from "../../../src/grant/keys.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { testGrantKeys } from "../../support/harness.ts";

/**
 * Grants are signed and verified with node:crypto (no jose on the hot path): the wire form must
 * stay exactly what jose made and verified, and the verifier at least as strict as jwtVerify.
 */
const TYP = "countersign-grant+jwt";
const NOW = new Date("2026-12-02T12:00:00.250Z");
const NOW_S = Math.floor(NOW.getTime() / 1000);
const AUD = grantAudience("production");

const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64url");
const b64json = (value: unknown): string => b64(JSON.stringify(value));

function grantInput(overrides: Partial<GrantInput> = {}): GrantInput {
  return {
    planId: randomUUID(),
    planHash: fingerprint({ plan: "wire" }),
    approvers: [{ user: "U0ALICE", via: "slack", at: new Date(NOW.getTime() - 5000).toISOString() }],
    environment: "production",
    issuedAt: new Date(NOW.getTime() - 5000),
    expiresAt: new Date(NOW.getTime() + 600_000),
    ...overrides,
  };
}

/** The claims issueGrant writes, in its order. */
function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    planHash: fingerprint({ plan: "wire" }),
    approvers: [{ user: "U0ALICE", via: "slack", at: NOW.toISOString() }],
    sub: randomUUID(),
    aud: AUD,
    iat: NOW_S - 5,
    exp: NOW_S + 600,
    jti: randomUUID(),
    ...overrides,
  };
}

/** Signs any header and payload text as they are, with a raw Ed25519 signature. */
function signRaw(headerSegment: string, payloadSegment: string, key: KeyObject): string {
  return `${headerSegment}.${payloadSegment}.${sign(null, Buffer.from(`${headerSegment}.${payloadSegment}`), key).toString("base64url")}`;
}

/** The verifier before node:crypto: jose's jwtVerify with the same options, then the claims schema. */
async function joseVerify(keys: VerifyingKeys, token: string, now: Date): Promise<boolean> {
  try {
    const { payload } = await jwtVerify(
      token,
      (header) => {
        const key = header.kid ? keys.byKid.get(header.kid) : undefined;
        if (!key) throw new Error("unknown key");
        return key;
      },
      { algorithms: ["EdDSA"], audience: AUD, typ: TYP, requiredClaims: ["sub", "exp", "iat", "jti"], currentDate: now },
    );
    return GrantClaims.safeParse(payload).success;
  } catch {
    return false;
  }
}

let main: { signing: SigningKey; verifying: VerifyingKeys; publicPem: string };
let other: SigningKey;
let good: { header: Record<string, unknown>; token: string };

beforeAll(async () => {
  main = await testGrantKeys();
  other = await loadSigningKey((await generateGrantKeys()).privatePem);
  const header = { alg: "EdDSA", kid: main.signing.kid, typ: TYP };
  good = { header, token: signRaw(b64json(header), b64json(claims()), main.signing.key) };
});

describe("grants on the wire: node:crypto and jose agree", () => {
  it("a grant from issueGrant is byte for byte the token jose's SignJWT makes of the same claims", async () => {
    const { token } = issueGrant(main.signing, grantInput());
    const jose = await new SignJWT(decodeJwt(token)).setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: TYP }).sign(main.signing.key);
    expect(token).toBe(jose);
  });

  it("jose's jwtVerify accepts a grant from issueGrant, with the public key imported by jose itself", async () => {
    const input = grantInput();
    const { token, jti } = issueGrant(main.signing, input);
    const { payload, protectedHeader } = await jwtVerify(token, await importSPKI(main.publicPem, "EdDSA"), {
      algorithms: ["EdDSA"],
      audience: AUD,
      typ: TYP,
      requiredClaims: ["sub", "exp", "iat", "jti"],
      currentDate: NOW,
    });
    expect(protectedHeader).toStrictEqual({ alg: "EdDSA", kid: main.signing.kid, typ: TYP });
    expect(payload).toStrictEqual({ planHash: input.planHash, approvers: input.approvers, sub: input.planId, aud: AUD, iat: NOW_S - 5, exp: NOW_S + 600, jti });
  });

  it("verifyGrant accepts a grant signed by jose's SignJWT (as issued before), current and expired", async () => {
    const input = grantInput();
    const signed = (exp: number) =>
      new SignJWT({ planHash: input.planHash, approvers: input.approvers })
        .setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: TYP })
        .setSubject(input.planId)
        .setAudience(AUD)
        .setIssuedAt(NOW_S - 1200)
        .setExpirationTime(exp)
        .setJti("jti-1")
        .sign(main.signing.key);
    const current = verifyGrant(main.verifying, await signed(NOW_S + 600), "production", NOW);
    expect(current).toStrictEqual({
      ok: true,
      expired: false,
      claims: { sub: input.planId, planHash: input.planHash, approvers: input.approvers, aud: AUD, iat: NOW_S - 1200, exp: NOW_S + 600, jti: "jti-1" },
    });
    const expired = verifyGrant(main.verifying, await signed(NOW_S - 600), "production", NOW);
    expect(expired.ok && expired.expired).toBe(true);
    // jose agrees on where expiry starts: exp is the first second it is expired.
    expect(verifyGrant(main.verifying, await signed(NOW_S), "production", NOW)).toMatchObject({ ok: true, expired: true });
    expect(verifyGrant(main.verifying, await signed(NOW_S + 1), "production", NOW)).toMatchObject({ ok: true, expired: false });
    expect(await joseVerify(main.verifying, await signed(NOW_S), NOW)).toBe(false);
    expect(await joseVerify(main.verifying, await signed(NOW_S + 1), NOW)).toBe(true);
  });

  it("the well-formed token the table below tampers with is accepted by both", async () => {
    expect(verifyGrant(main.verifying, good.token, "production", NOW)).toMatchObject({ ok: true, expired: false });
    expect(await joseVerify(main.verifying, good.token, NOW)).toBe(true);
  });
});

/** A header or payload to sign as given; `raw` is JSON text, for what JSON.stringify cannot write. */
type Part = Record<string, unknown> | { raw: string };
const segment = (part: Part): string => ("raw" in part && typeof part.raw === "string" ? b64(part.raw) : b64json(part));
const withHeader = (edit: (h: Record<string, unknown>) => void) => (): string => {
  const header = { ...good.header };
  edit(header);
  return signRaw(b64json(header), b64json(claims()), main.signing.key);
};
const withClaims = (payload: Part) => (): string => signRaw(b64json(good.header), segment(payload), main.signing.key);
const withoutClaim = (claim: string) => (): string => {
  const c = claims();
  delete c[claim];
  return signRaw(b64json(good.header), b64json(c), main.signing.key);
};
/** Re-encodes the last character of a segment with the unused low bits set: same bytes, not canonical. */
function nonCanonical(seg: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = alphabet[alphabet.indexOf(seg.at(-1)!) ^ 1]!;
  const changed = seg.slice(0, -1) + last;
  expect(Buffer.from(changed, "base64url")).toStrictEqual(Buffer.from(seg, "base64url"));
  return changed;
}
const parts = (token: string): [string, string, string] => token.split(".") as [string, string, string];

describe("verifyGrant refuses a tampered or foreign token, naming why", () => {
  // [case, token, reason, does jose (jwtVerify + the claims schema, as before) refuse it too?]
  const table: [string, () => string, RegExp, "jose refuses too" | "stricter than jose"][] = [
    [
      "alg ES256 in the header",
      withHeader((h) => {
        h.alg = "ES256";
      }),
      /alg must be EdDSA, not "ES256"/,
      "jose refuses too",
    ],
    [
      "alg Ed25519 (the fully-specified name; never issued)",
      withHeader((h) => {
        h.alg = "Ed25519";
      }),
      /alg must be EdDSA/,
      "jose refuses too",
    ],
    [
      "alg none, unsigned",
      () => `${b64json({ alg: "none", kid: main.signing.kid, typ: TYP })}.${b64json(claims())}.`,
      /alg must be EdDSA, not "none"/,
      "jose refuses too",
    ],
    [
      "alg missing",
      withHeader((h) => {
        delete h.alg;
      }),
      /alg must be EdDSA, not undefined/,
      "jose refuses too",
    ],
    [
      "HS256 keyed with the public key PEM",
      () => {
        const h = b64json({ alg: "HS256", kid: main.signing.kid, typ: TYP });
        const p = b64json(claims());
        return `${h}.${p}.${createHmac("sha256", main.publicPem).update(`${h}.${p}`).digest("base64url")}`;
      },
      /alg must be EdDSA, not "HS256"/,
      "jose refuses too",
    ],
    [
      "an unknown kid",
      withHeader((h) => {
        h.kid = "no-such-key";
      }),
      /unknown key 'no-such-key'/,
      "jose refuses too",
    ],
    [
      "no kid",
      withHeader((h) => {
        delete h.kid;
      }),
      /unknown key '\(no kid\)'/,
      "jose refuses too",
    ],
    [
      "a kid that is not a string",
      withHeader((h) => {
        h.kid = 7;
      }),
      /unknown key '\(no kid\)'/,
      "jose refuses too",
    ],
    [
      "typ JWT",
      withHeader((h) => {
        h.typ = "JWT";
      }),
      /"typ".*"JWT"/,
      "jose refuses too",
    ],
    [
      "no typ",
      withHeader((h) => {
        delete h.typ;
      }),
      /"typ"/,
      "jose refuses too",
    ],
    [
      "typ with an application/ prefix (never issued)",
      withHeader((h) => {
        h.typ = `application/${TYP}`;
      }),
      /"typ"/,
      "stricter than jose",
    ],
    [
      "crit naming exp",
      withHeader((h) => {
        h.crit = ["exp"];
        h.exp = NOW_S + 600;
      }),
      /crit/,
      "jose refuses too",
    ],
    [
      "crit b64 with b64 false",
      withHeader((h) => {
        h.crit = ["b64"];
        h.b64 = false;
      }),
      /crit/,
      "jose refuses too",
    ],
    [
      "an extra header member (jwk)",
      withHeader((h) => {
        h.jwk = main.signing.key.export({ format: "jwk" });
      }),
      /unexpected header member.*"jwk"/,
      "stricter than jose",
    ],
    [
      "an extra header member (__proto__)",
      () => signRaw(b64(`{"alg":"EdDSA","kid":"${main.signing.kid}","typ":"${TYP}","__proto__":{"x":1}}`), b64json(claims()), main.signing.key),
      /unexpected header member.*"__proto__"/,
      "stricter than jose",
    ],
    [
      "a header that is a JSON array",
      () => signRaw(b64json(["EdDSA"]), b64json(claims()), main.signing.key),
      /protected header is not a JSON object/,
      "jose refuses too",
    ],
    [
      "a signature from another key, naming the configured kid",
      () => signRaw(b64json(good.header), b64json(claims()), other.key),
      /signature verification failed/,
      "jose refuses too",
    ],
    [
      "the payload edited after signing",
      () => {
        const [h, , s] = parts(good.token);
        return `${h}.${b64json(claims({ aud: AUD }))}.${s}`;
      },
      /signature verification failed/,
      "jose refuses too",
    ],
    [
      "the header re-encoded after signing (members reordered)",
      () => {
        const [, p, s] = parts(good.token);
        return `${b64json({ typ: TYP, kid: main.signing.kid, alg: "EdDSA" })}.${p}.${s}`;
      },
      /signature verification failed/,
      "jose refuses too",
    ],
    ["no signature", () => `${parts(good.token)[0]}.${parts(good.token)[1]}.`, /signature verification failed/, "jose refuses too"],
    ["a signature with padding", () => `${good.token}==`, /signature is not strict base64url/, "stricter than jose"],
    [
      "a signature with non-zero unused bits (same bytes)",
      () => {
        const [h, p, s] = parts(good.token);
        return `${h}.${p}.${nonCanonical(s)}`;
      },
      /signature is not strict base64url/,
      "stricter than jose",
    ],
    [
      "a header with padding",
      () => {
        const [h, p] = parts(good.token);
        return signRaw(`${h}=`, p, main.signing.key);
      },
      /protected header is not strict base64url/,
      "jose refuses too",
    ],
    [
      "a payload with whitespace in its base64url",
      () => {
        const [h, p] = parts(good.token);
        return signRaw(h, `${p.slice(0, 8)} ${p.slice(8)}`, main.signing.key);
      },
      /payload is not strict base64url/,
      "stricter than jose",
    ],
    ["a trailing newline", () => `${good.token}\n`, /signature is not strict base64url/, "stricter than jose"],
    ["two segments", () => parts(good.token).slice(0, 2).join("."), /compact JWS/, "jose refuses too"],
    ["four segments", () => `${good.token}.x`, /compact JWS/, "jose refuses too"],
    ["a payload that is a JSON array", withClaims({ raw: JSON.stringify([claims()]) }), /payload is not a JSON object/, "jose refuses too"],
    ["a payload that is null", withClaims({ raw: "null" }), /payload is not a JSON object/, "jose refuses too"],
    ["a payload that is not JSON", withClaims({ raw: "{sub: 1" }), /payload is not JSON/, "jose refuses too"],
    ["another environment's audience", withClaims(claims({ aud: grantAudience("staging") })), /"aud".*staging/, "jose refuses too"],
    ["the audience inside an array", withClaims(claims({ aud: [AUD] })), /"aud"/, "jose refuses too"],
    ["no audience", withClaims(claims({ aud: undefined })), /"aud"/, "jose refuses too"],
    ["no jti", withoutClaim("jti"), /missing required "jti" claim/, "jose refuses too"],
    ["no sub", withoutClaim("sub"), /missing required "sub" claim/, "jose refuses too"],
    ["no exp", withoutClaim("exp"), /missing required "exp" claim/, "jose refuses too"],
    ["no iat", withoutClaim("iat"), /missing required "iat" claim/, "jose refuses too"],
    ["a fractional exp", withClaims(claims({ exp: NOW_S + 600.5 })), /"exp" claim must be a whole number/, "jose refuses too"],
    ["an exp in a string", withClaims(claims({ exp: String(NOW_S + 600) })), /"exp" claim must be a whole number/, "jose refuses too"],
    ["a fractional iat", withClaims(claims({ iat: NOW_S - 0.5 })), /"iat" claim must be a whole number/, "jose refuses too"],
    ["an nbf in the future", withClaims(claims({ nbf: NOW_S + 60 })), /"nbf"/, "jose refuses too"],
    [
      "an expired grant with a wrong audience (expiry is reported only when all else passes)",
      withClaims(claims({ aud: grantAudience("staging"), iat: NOW_S - 1200, exp: NOW_S - 600 })),
      /"aud"/,
      "jose refuses too",
    ],
    ["an expired grant with an nbf after its exp", withClaims(claims({ iat: NOW_S - 1200, exp: NOW_S - 600, nbf: NOW_S - 300 })), /"nbf"/, "jose refuses too"],
    ["a sub that is not a uuid (the claims schema)", withClaims(claims({ sub: "plan-1" })), /malformed.*sub/, "jose refuses too"],
  ];

  it.each(table)("%s", async (_case, make, reason, jose) => {
    const token = make();
    const check = verifyGrant(main.verifying, token, "production", NOW);
    expect(check.ok, token).toBe(false);
    if (check.ok) return;
    expect(check.reason).toMatch(reason);
    expect(check).toStrictEqual({ ok: false, reason: check.reason });
    expect(await joseVerify(main.verifying, token, NOW)).toBe(jose === "stricter than jose");
  });

  it("keys load as node:crypto Ed25519 KeyObjects, which jose accepts too", async () => {
    const keys = await loadVerifyingKeys(main.publicPem);
    const key = keys.byKid.get(main.signing.kid)!;
    expect(key.asymmetricKeyType).toBe("ed25519");
    expect(main.signing.key.asymmetricKeyType).toBe("ed25519");
    expect(main.signing.key.type).toBe("private");
    expect((await jwtVerify(good.token, key, { currentDate: NOW })).payload.aud).toBe(AUD);
  });
});
