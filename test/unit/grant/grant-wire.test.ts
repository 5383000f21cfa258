import { createHmac, randomUUID, sign, type KeyObject } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { grantAudience, verifyGrant } from "../../../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, loadVerifyingKeys, type SigningKey, type VerifyingKeys } from "../../../src/grant/keys.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { testGrantKeys } from "../../support/harness.ts";

/**
 * Tokens signed as they are (raw Ed25519 over any header and payload text), each of which
 * verifyGrant must refuse with its reason.
 */
const TYP = "countersign-grant+jwt";
const NOW = new Date("2026-12-02T12:00:00.250Z");
const NOW_S = Math.floor(NOW.getTime() / 1000);
const AUD = grantAudience("production");

const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64url");
const b64json = (value: unknown): string => b64(JSON.stringify(value));

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

let main: { signing: SigningKey; verifying: VerifyingKeys; publicPem: string };
let other: SigningKey;
let good: { header: Record<string, unknown>; token: string };

beforeAll(async () => {
  main = await testGrantKeys();
  other = await loadSigningKey((await generateGrantKeys()).privatePem);
  const header = { alg: "EdDSA", kid: main.signing.kid, typ: TYP };
  good = { header, token: signRaw(b64json(header), b64json(claims()), main.signing.key) };
});

describe("the grant the tables below tamper with", () => {
  it("is accepted as it stands", async () => {
    expect(await verifyGrant(main.verifying, good.token, "production", NOW)).toMatchObject({ ok: true, expired: false });
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

async function expectRefused(token: string, reason: RegExp): Promise<void> {
  const check = await verifyGrant(main.verifying, token, "production", NOW);
  expect(check.ok, token).toBe(false);
  if (check.ok) return;
  expect(check.reason).toMatch(reason);
  expect(check).toStrictEqual({ ok: false, reason: check.reason });
}

describe("verifyGrant refuses, before jose sees it, what jwtVerify would accept but issueGrant never writes", () => {
  const table: [string, () => string, RegExp][] = [
    [
      "typ with an application/ prefix (never issued)",
      withHeader((h) => {
        h.typ = `application/${TYP}`;
      }),
      /"typ"/,
    ],
    [
      "an extra header member (jwk)",
      withHeader((h) => {
        h.jwk = main.signing.key.export({ format: "jwk" });
      }),
      /unexpected header member.*"jwk"/,
    ],
    [
      "an extra header member (__proto__)",
      () => signRaw(b64(`{"alg":"EdDSA","kid":"${main.signing.kid}","typ":"${TYP}","__proto__":{"x":1}}`), b64json(claims()), main.signing.key),
      /unexpected header member.*"__proto__"/,
    ],
    ["a signature with padding", () => `${good.token}==`, /signature is not strict base64url/],
    [
      "a signature with non-zero unused bits (same bytes)",
      () => {
        const [h, p, s] = parts(good.token);
        return `${h}.${p}.${nonCanonical(s)}`;
      },
      /signature is not strict base64url/,
    ],
    [
      "a payload with whitespace in its base64url",
      () => {
        const [h, p] = parts(good.token);
        return signRaw(h, `${p.slice(0, 8)} ${p.slice(8)}`, main.signing.key);
      },
      /payload is not strict base64url/,
    ],
    ["a trailing newline", () => `${good.token}\n`, /signature is not strict base64url/],
  ];

  it.each(table)("%s", async (_case, make, reason) => {
    await expectRefused(make(), reason);
  });
});

describe("verifyGrant refuses a tampered or foreign token, naming why", () => {
  const table: [string, () => string, RegExp][] = [
    [
      "alg ES256 in the header",
      withHeader((h) => {
        h.alg = "ES256";
      }),
      /"alg" \(Algorithm\) Header Parameter value not allowed/,
    ],
    [
      "alg Ed25519 (the fully-specified name; never issued)",
      withHeader((h) => {
        h.alg = "Ed25519";
      }),
      /"alg" \(Algorithm\) Header Parameter value not allowed/,
    ],
    [
      "alg none, unsigned",
      () => `${b64json({ alg: "none", kid: main.signing.kid, typ: TYP })}.${b64json(claims())}.`,
      /"alg" \(Algorithm\) Header Parameter value not allowed/,
    ],
    [
      "alg missing",
      withHeader((h) => {
        delete h.alg;
      }),
      /"alg" \(Algorithm\) Header Parameter missing/,
    ],
    [
      "HS256 keyed with the public key PEM",
      () => {
        const h = b64json({ alg: "HS256", kid: main.signing.kid, typ: TYP });
        const p = b64json(claims());
        return `${h}.${p}.${createHmac("sha256", main.publicPem).update(`${h}.${p}`).digest("base64url")}`;
      },
      /"alg" \(Algorithm\) Header Parameter value not allowed/,
    ],
    [
      "an unknown kid",
      withHeader((h) => {
        h.kid = "no-such-key";
      }),
      /unknown key `no-such-key`/,
    ],
    [
      "no kid",
      withHeader((h) => {
        delete h.kid;
      }),
      /unknown key '\(no kid\)'/,
    ],
    [
      "a kid that is not a string",
      withHeader((h) => {
        h.kid = 7;
      }),
      /unknown key '\(no kid\)'/,
    ],
    [
      "typ JWT",
      withHeader((h) => {
        h.typ = "JWT";
      }),
      /"typ".*"JWT"/,
    ],
    [
      "no typ",
      withHeader((h) => {
        delete h.typ;
      }),
      /"typ"/,
    ],
    [
      "crit naming exp",
      withHeader((h) => {
        h.crit = ["exp"];
        h.exp = NOW_S + 600;
      }),
      /crit/,
    ],
    [
      "crit b64 with b64 false",
      withHeader((h) => {
        h.crit = ["b64"];
        h.b64 = false;
      }),
      /crit/,
    ],
    ["a header that is a JSON array", () => signRaw(b64json(["EdDSA"]), b64json(claims()), main.signing.key), /JWS Protected Header is invalid/],
    [
      "a signature from another key, naming the configured kid",
      () => signRaw(b64json(good.header), b64json(claims()), other.key),
      /signature verification failed/,
    ],
    [
      "the payload edited after signing",
      () => {
        const [h, , s] = parts(good.token);
        return `${h}.${b64json(claims({ aud: AUD }))}.${s}`;
      },
      /signature verification failed/,
    ],
    [
      "the header re-encoded after signing (members reordered)",
      () => {
        const [, p, s] = parts(good.token);
        return `${b64json({ typ: TYP, kid: main.signing.kid, alg: "EdDSA" })}.${p}.${s}`;
      },
      /signature verification failed/,
    ],
    ["no signature", () => `${parts(good.token)[0]}.${parts(good.token)[1]}.`, /signature verification failed/],
    [
      "a header with padding",
      () => {
        const [h, p] = parts(good.token);
        return signRaw(`${h}=`, p, main.signing.key);
      },
      /protected header is not strict base64url/,
    ],
    ["two segments", () => parts(good.token).slice(0, 2).join("."), /Invalid Compact JWS/],
    ["four segments", () => `${good.token}.x`, /Invalid Compact JWS/],
    ["a payload that is a JSON array", withClaims({ raw: JSON.stringify([claims()]) }), /JWT Claims Set must be a top-level JSON object/],
    ["a payload that is null", withClaims({ raw: "null" }), /JWT Claims Set must be a top-level JSON object/],
    ["a payload that is not JSON", withClaims({ raw: "{sub: 1" }), /JWT Claims Set must be a top-level JSON object/],
    ["another environment's audience", withClaims(claims({ aud: grantAudience("staging") })), /"aud".*staging/],
    ["the audience inside an array", withClaims(claims({ aud: [AUD] })), /malformed.*aud/],
    ["no audience", withClaims(claims({ aud: undefined })), /"aud"/],
    ["no jti", withoutClaim("jti"), /missing required "jti" claim/],
    ["no sub", withoutClaim("sub"), /missing required "sub" claim/],
    ["no exp", withoutClaim("exp"), /missing required "exp" claim/],
    ["no iat", withoutClaim("iat"), /missing required "iat" claim/],
    ["a fractional exp", withClaims(claims({ exp: NOW_S + 600.5 })), /malformed.*exp/],
    ["an exp in a string", withClaims(claims({ exp: String(NOW_S + 600) })), /"exp" claim must be a number/],
    ["a fractional iat", withClaims(claims({ iat: NOW_S - 0.5 })), /malformed.*iat/],
    ["an nbf in the future", withClaims(claims({ nbf: NOW_S + 60 })), /"nbf"/],
    [
      "an expired grant with a wrong audience (expiry is reported only when all else passes)",
      withClaims(claims({ aud: grantAudience("staging"), iat: NOW_S - 1200, exp: NOW_S - 600 })),
      /"aud"/,
    ],
    ["an expired grant with an nbf after its exp", withClaims(claims({ iat: NOW_S - 1200, exp: NOW_S - 600, nbf: NOW_S - 300 })), /"nbf"/],
    ["a sub that is not a uuid (the claims schema)", withClaims(claims({ sub: "plan-1" })), /malformed.*sub/],
  ];

  it.each(table)("%s", async (_case, make, reason) => {
    await expectRefused(make(), reason);
  });

  it("keys load as node:crypto Ed25519 KeyObjects", async () => {
    const keys = await loadVerifyingKeys(main.publicPem);
    const key = keys.byKid.get(main.signing.kid)!;
    expect(key.asymmetricKeyType).toBe("ed25519");
    expect(main.signing.key.asymmetricKeyType).toBe("ed25519");
    expect(main.signing.key.type).toBe("private");
  });
});
