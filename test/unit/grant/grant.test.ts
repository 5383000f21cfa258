import { createHmac, createPublicKey, generateKeyPairSync, randomUUID } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { grantAudience, issueGrant, verifyGrant, type GrantInput } from "../../../src/grant/grant.ts";
import { GRANT_ALG, generateGrantKeys, loadSigningKey, loadVerifyingKeys, type SigningKey, type VerifyingKeys } from "../../../src/grant/keys.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { testGrantKeys } from "../../support/harness.ts";

const TYP = "countersign-grant+jwt";
const NOW = new Date("2026-12-02T12:00:00.250Z");
const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);
const at = (offsetSeconds: number): Date => new Date(NOW.getTime() + offsetSeconds * 1000);

const b64json = (value: unknown): string => Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
const unb64json = (segment: string): Record<string, unknown> => JSON.parse(Buffer.from(segment, "base64url").toString("utf8")) as Record<string, unknown>;

function segments(token: string): [string, string, string] {
  const parts = token.split(".");
  expect(parts).toHaveLength(3);
  return parts as [string, string, string];
}

/** Re-encodes the payload segment after `edit`, keeping the original header and signature. */
function tamperPayload(token: string, edit: (payload: Record<string, unknown>) => void): string {
  const [header, payload, signature] = segments(token);
  const claims = unb64json(payload);
  edit(claims);
  const tampered = b64json(claims);
  expect(tampered).not.toBe(payload);
  return `${header}.${tampered}.${signature}`;
}

/** Changes one character in the middle of the signature (the last character carries padding bits). */
function flipSignature(token: string): string {
  const [header, payload, signature] = segments(token);
  const i = Math.floor(signature.length / 2);
  const flipped = signature.slice(0, i) + (signature[i] === "A" ? "B" : "A") + signature.slice(i + 1);
  expect(Buffer.from(flipped, "base64url")).not.toEqual(Buffer.from(signature, "base64url"));
  return `${header}.${payload}.${flipped}`;
}

function grantInput(overrides: Partial<GrantInput> = {}): GrantInput {
  return {
    planId: randomUUID(),
    planHash: fingerprint({ plan: "some plan" }),
    approvers: [{ user: "U0ALICE", via: "slack", at: at(-5).toISOString() }],
    environment: "production",
    issuedAt: at(-5),
    expiresAt: at(600),
    ...overrides,
  };
}

/** What a well-formed grant carries, for tests that sign their own (malformed or forged) tokens. */
function claimsFor(input: GrantInput): Record<string, unknown> {
  return {
    sub: input.planId,
    planHash: input.planHash,
    approvers: input.approvers,
    aud: grantAudience(input.environment),
    iat: seconds(input.issuedAt),
    exp: seconds(input.expiresAt),
    jti: randomUUID(),
  };
}

function expectRefused(check: Awaited<ReturnType<typeof verifyGrant>>, reason: RegExp): void {
  expect(check.ok).toBe(false);
  if (check.ok) return;
  expect(check.reason).toMatch(reason);
  expect("claims" in check).toBe(false);
}

let main: { signing: SigningKey; verifying: VerifyingKeys; publicPem: string; privatePem: string };
let other: { signing: SigningKey; verifying: VerifyingKeys; publicPem: string; privatePem: string; kid: string };

beforeAll(async () => {
  main = await testGrantKeys();
  const pair = await generateGrantKeys();
  other = {
    signing: await loadSigningKey(pair.privatePem),
    verifying: await loadVerifyingKeys(pair.publicPem),
    publicPem: pair.publicPem,
    privatePem: pair.privatePem,
    kid: pair.kid,
  };
  expect(other.kid).not.toBe(main.signing.kid);
});

describe("issueGrant + verifyGrant: a valid grant", () => {
  it("verifies, with every claim the executor relies on", async () => {
    const input = grantInput({
      approvers: [
        { user: "U0ALICE", via: "slack", at: at(-9).toISOString() },
        { user: "U0BOB", via: "web", at: at(-5).toISOString() },
      ],
    });
    const { token, jti } = await issueGrant(main.signing, input);

    const check = await verifyGrant(main.verifying, token, "production", NOW);
    expect(check).toStrictEqual({
      ok: true,
      expired: false,
      claims: {
        sub: input.planId,
        planHash: input.planHash,
        approvers: input.approvers,
        aud: "countersign-executor:production",
        iat: seconds(input.issuedAt),
        exp: seconds(input.expiresAt),
        jti,
      },
    });
    // The wire form carries the same claims (no extra ones the executor would ignore).
    expect(decodeJwt(token)).toStrictEqual({ ...(check.ok ? check.claims : {}) });
  });

  it("is a compact JWS with alg EdDSA, the key's thumbprint as kid, and the grant typ", async () => {
    const pair = await generateGrantKeys();
    const signing = await loadSigningKey(pair.privatePem);
    const { token } = await issueGrant(signing, grantInput());
    expect(token.split(".")).toHaveLength(3);
    expect(decodeProtectedHeader(token)).toStrictEqual({ alg: "EdDSA", kid: pair.kid, typ: TYP });
    expect(GRANT_ALG).toBe("EdDSA");
  });

  it("gives every grant its own jti", async () => {
    const input = grantInput();
    const a = await issueGrant(main.signing, input);
    const b = await issueGrant(main.signing, input);
    expect(a.jti).not.toBe(b.jti);
    expect(decodeJwt(a.token).jti).toBe(a.jti);
    expect(decodeJwt(b.token).jti).toBe(b.jti);
  });

  it("truncates iat and exp to whole seconds", async () => {
    const input = grantInput({ issuedAt: new Date("2026-12-02T12:00:00.999Z"), expiresAt: new Date("2026-12-02T12:10:00.999Z") });
    const { token } = await issueGrant(main.signing, input);
    const check = await verifyGrant(main.verifying, token, "production", new Date("2026-12-02T12:05:00Z"));
    expect(check.ok && check.claims.iat).toBe(Date.UTC(2026, 11, 2, 12, 0, 0) / 1000);
    expect(check.ok && check.claims.exp).toBe(Date.UTC(2026, 11, 2, 12, 10, 0) / 1000);
  });
});

describe("verifyGrant refuses", () => {
  it("a grant signed by another key (not configured on the executor)", async () => {
    const { token } = await issueGrant(other.signing, grantInput());
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), new RegExp(`unknown key \`${other.kid}\``));
  });

  it("a grant whose kid names no configured key", async () => {
    const { token } = await issueGrant(main.signing, grantInput());
    const [, payload, signature] = segments(token);
    const header = b64json({ alg: "EdDSA", kid: "no-such-key", typ: TYP });
    expectRefused(await verifyGrant(main.verifying, `${header}.${payload}.${signature}`, "production", NOW), /unknown key `no-such-key`/);
  });

  it("a grant with no kid at all", async () => {
    const input = grantInput();
    const token = await new SignJWT(claimsFor(input)).setProtectedHeader({ alg: "EdDSA", typ: TYP }).sign(main.signing.key);
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /unknown key '\(no kid\)'/);
  });

  it("a grant that names a configured key's kid but is signed by another key", async () => {
    const input = grantInput();
    const token = await new SignJWT(claimsFor(input)).setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: TYP }).sign(other.signing.key);
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /signature/i);
  });

  it.each<[string, (payload: Record<string, unknown>) => void]>([
    [
      "sub (another plan)",
      (p) => {
        p.sub = randomUUID();
      },
    ],
    [
      "planHash",
      (p) => {
        p.planHash = fingerprint({ plan: "another plan" });
      },
    ],
    [
      "exp (extended)",
      (p) => {
        p.exp = (p.exp as number) + 86_400;
      },
    ],
    [
      "aud",
      (p) => {
        p.aud = grantAudience("staging");
      },
    ],
    [
      "approvers",
      (p) => {
        p.approvers = [{ user: "U0MALLORY", via: "web", at: at(-1).toISOString() }];
      },
    ],
  ])("a grant whose payload was altered: %s", async (_name, edit) => {
    const { token } = await issueGrant(main.signing, grantInput({ environment: "production" }));
    const tampered = tamperPayload(token, edit);
    expectRefused(await verifyGrant(main.verifying, tampered, "production", NOW), /signature verification failed/i);
  });

  it("an extended exp on an expired grant (tamper to revive it)", async () => {
    const { token } = await issueGrant(main.signing, grantInput({ issuedAt: at(-1200), expiresAt: at(-600) }));
    const revived = tamperPayload(token, (p) => {
      p.exp = seconds(at(3600));
    });
    expectRefused(await verifyGrant(main.verifying, revived, "production", NOW), /signature verification failed/i);
  });

  it("a grant whose signature was altered", async () => {
    const { token } = await issueGrant(main.signing, grantInput());
    expectRefused(await verifyGrant(main.verifying, flipSignature(token), "production", NOW), /signature verification failed/i);
  });

  it("a grant with its signature removed", async () => {
    const { token } = await issueGrant(main.signing, grantInput());
    const [header, payload] = segments(token);
    expect((await verifyGrant(main.verifying, `${header}.${payload}.`, "production", NOW)).ok).toBe(false);
  });

  it("an unsigned token (alg: none), even naming a configured kid", async () => {
    const input = grantInput();
    const claims = b64json(claimsFor(input));
    for (const header of [{ alg: "none" }, { alg: "none", kid: main.signing.kid, typ: TYP }, { alg: "None", kid: main.signing.kid, typ: TYP }]) {
      const token = `${b64json(header)}.${claims}.`;
      const check = await verifyGrant(main.verifying, token, "production", NOW);
      expect(check.ok, JSON.stringify(header)).toBe(false);
    }
    const pinned = await verifyGrant(main.verifying, `${b64json({ alg: "none", kid: main.signing.kid, typ: TYP })}.${claims}.`, "production", NOW);
    expectRefused(pinned, /alg/i);
  });

  it("an HS256 token keyed with the public key (algorithm confusion)", async () => {
    const input = grantInput();
    const header = b64json({ alg: "HS256", kid: main.signing.kid, typ: TYP });
    const payload = b64json(claimsFor(input));
    const der = createPublicKey(main.publicPem).export({ type: "spki", format: "der" });
    for (const secret of [main.publicPem, main.publicPem.trim(), der]) {
      const signature = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
      expectRefused(await verifyGrant(main.verifying, `${header}.${payload}.${signature}`, "production", NOW), /alg/i);
    }
  });

  it("a grant for another environment (audience)", async () => {
    const { token } = await issueGrant(main.signing, grantInput({ environment: "staging" }));
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /aud/);
    // The same grant is good where it was meant to go.
    expect((await verifyGrant(main.verifying, token, "staging", NOW)).ok).toBe(true);
  });

  it("a grant with a foreign typ", async () => {
    const input = grantInput();
    const token = await new SignJWT(claimsFor(input)).setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: "JWT" }).sign(main.signing.key);
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /typ/);
  });

  it.each<[string, string, (claims: Record<string, unknown>) => void]>([
    [
      "missing planHash",
      "planHash",
      (c) => {
        delete c.planHash;
      },
    ],
    [
      "planHash not a sha256 fingerprint",
      "planHash",
      (c) => {
        c.planHash = "md5:abc";
      },
    ],
    [
      "missing approvers",
      "approvers",
      (c) => {
        delete c.approvers;
      },
    ],
    [
      "empty approvers",
      "approvers",
      (c) => {
        c.approvers = [];
      },
    ],
    [
      "approver via an unknown channel",
      "approvers",
      (c) => {
        c.approvers = [{ user: "U0ALICE", via: "email", at: at(-1).toISOString() }];
      },
    ],
    [
      "sub not a uuid",
      "sub",
      (c) => {
        c.sub = "plan-1";
      },
    ],
  ])("a correctly signed grant with malformed claims: %s", async (_name, field, edit) => {
    const claims = claimsFor(grantInput());
    edit(claims);
    const token = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: TYP }).sign(main.signing.key);
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), new RegExp(`malformed.*${field}`));
  });

  it.each<[string, string]>([
    ["jti", "jti"],
    ["sub", "sub"],
    ["iat", "iat"],
    ["exp", "exp"],
  ])("a correctly signed grant without %s", async (_name, claim) => {
    const claims = claimsFor(grantInput());
    delete claims[claim];
    const token = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: TYP }).sign(main.signing.key);
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), new RegExp(claim));
  });

  it("garbage", async () => {
    for (const token of ["", "not-a-jwt", "a.b.c", "..."]) {
      expect((await verifyGrant(main.verifying, token, "production", NOW)).ok, token).toBe(false);
    }
  });
});

describe("verifyGrant on an expired grant", () => {
  it("reports it expired, with its claims, so the executor can only reconcile", async () => {
    const input = grantInput({ issuedAt: at(-1200), expiresAt: at(-600) });
    const { token, jti } = await issueGrant(main.signing, input);
    const check = await verifyGrant(main.verifying, token, "production", NOW);
    expect(check).toStrictEqual({
      ok: true,
      expired: true,
      claims: {
        sub: input.planId,
        planHash: input.planHash,
        approvers: input.approvers,
        aud: grantAudience("production"),
        iat: seconds(input.issuedAt),
        exp: seconds(input.expiresAt),
        jti,
      },
    });
  });

  it("is expired from the second of exp on, and not before", async () => {
    const input = grantInput({ issuedAt: at(-60), expiresAt: new Date("2026-12-02T12:10:00Z") });
    const { token } = await issueGrant(main.signing, input);
    const before = await verifyGrant(main.verifying, token, "production", new Date("2026-12-02T12:09:59Z"));
    const onTheSecond = await verifyGrant(main.verifying, token, "production", new Date("2026-12-02T12:10:00Z"));
    expect(before.ok && before.expired).toBe(false);
    expect(before.ok).toBe(true);
    expect(onTheSecond.ok && onTheSecond.expired).toBe(true);
  });

  it("with the wrong audience is still refused", async () => {
    const { token } = await issueGrant(main.signing, grantInput({ environment: "staging", issuedAt: at(-1200), expiresAt: at(-600) }));
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /aud/);
  });

  it("with a bad signature is still refused", async () => {
    const { token } = await issueGrant(main.signing, grantInput({ issuedAt: at(-1200), expiresAt: at(-600) }));
    expectRefused(await verifyGrant(main.verifying, flipSignature(token), "production", NOW), /signature verification failed/i);
  });

  it("signed by another key is still refused", async () => {
    const { token } = await issueGrant(other.signing, grantInput({ issuedAt: at(-1200), expiresAt: at(-600) }));
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /unknown key/);
  });

  it("with malformed claims is still refused", async () => {
    const claims = claimsFor(grantInput({ issuedAt: at(-1200), expiresAt: at(-600) }));
    delete claims.planHash;
    const token = await new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", kid: main.signing.kid, typ: TYP }).sign(main.signing.key);
    expectRefused(await verifyGrant(main.verifying, token, "production", NOW), /malformed.*planHash/);
  });
});

describe("grant keys", () => {
  it("loadSigningKey gives the kid generateGrantKeys reported, and loadVerifyingKeys indexes the public key by it", async () => {
    const pair = await generateGrantKeys();
    expect(pair.privatePem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(pair.publicPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect(pair.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await loadSigningKey(pair.privatePem)).kid).toBe(pair.kid);
    expect((await loadSigningKey(`\n  ${pair.privatePem}\n\n`)).kid).toBe(pair.kid);
    expect([...(await loadVerifyingKeys(pair.publicPem)).byKid.keys()]).toStrictEqual([pair.kid]);
  });

  it("two key pairs have different kids", async () => {
    const a = await generateGrantKeys();
    const b = await generateGrantKeys();
    expect(a.kid).not.toBe(b.kid);
  });

  it("rotation: two PEM blocks verify grants from both keys, and nothing else", async () => {
    const both = await loadVerifyingKeys(`${main.publicPem}\n${other.publicPem}`);
    expect(new Set(both.byKid.keys())).toStrictEqual(new Set([main.signing.kid, other.kid]));
    const fromMain = await issueGrant(main.signing, grantInput());
    const fromOther = await issueGrant(other.signing, grantInput());
    expect((await verifyGrant(both, fromMain.token, "production", NOW)).ok).toBe(true);
    expect((await verifyGrant(both, fromOther.token, "production", NOW)).ok).toBe(true);
    const third = await loadSigningKey((await generateGrantKeys()).privatePem);
    expectRefused(await verifyGrant(both, (await issueGrant(third, grantInput())).token, "production", NOW), /unknown key/);
    // Once the old key is dropped, its grants no longer verify.
    const newOnly = await loadVerifyingKeys(other.publicPem);
    expectRefused(await verifyGrant(newOnly, fromMain.token, "production", NOW), /unknown key/);
  });

  it.each([["garbage"], [""], ["-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----"]])("loadVerifyingKeys(%j) throws", async (text) => {
    await expect(loadVerifyingKeys(text)).rejects.toThrow();
  });

  it("loadVerifyingKeys throws on a PEM block that is not an Ed25519 public key", async () => {
    await expect(loadVerifyingKeys("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----")).rejects.toThrow();
    const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    await expect(loadVerifyingKeys(publicKey.export({ type: "spki", format: "pem" }) as string)).rejects.toThrow();
  });

  it("loadSigningKey throws on garbage and on a public key", async () => {
    await expect(loadSigningKey("garbage")).rejects.toThrow();
    await expect(loadSigningKey(main.publicPem)).rejects.toThrow();
  });
});
